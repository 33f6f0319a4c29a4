"""The recorded same-code overlap of cross-launch intervals (docs/results/launch_overlap.json, written by
scripts/launch_overlap.py): its overlap counts follow from its intervals, a few intervals recomputed from the jobs'
steps with today's interval code agree with the recorded ones, and the recorded overlap meets the 95% target."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "results" / "launch_overlap.json"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("launch_overlap", ROOT / "scripts" / "launch_overlap.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("launch_overlap", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_record_ran_the_judging_plan(record):
    from pytest_genai.train.launches import MIN_JUDGING

    assert record["per_side"] == MIN_JUDGING and len(record["repeats"]) >= 10 and record["commit"]
    for rep in record["repeats"]:
        assert len(rep["sharded_steps"]) == len(rep["ddp_steps"]) == MIN_JUDGING


def test_the_overlap_counts_follow_from_the_recorded_intervals(script, record):
    for name, s in record["score"].items():
        assert script.pair_overlap(s["intervals"]) == (s["overlapping_pairs"], s["pairs"]), name
    assert record["score"]["launches"]["share"] >= script.TARGET


def test_todays_interval_code_gives_the_recorded_intervals(script, record):
    recomputed = script.score(record["repeats"][:3])
    for name in ("launches", "one_launch_a_side"):
        for new, old in zip(recomputed[name]["intervals"], record["score"][name]["intervals"]):
            assert (new["lo"], new["hi"], new["level"]) == pytest.approx((old["lo"], old["hi"], old["level"])), name
