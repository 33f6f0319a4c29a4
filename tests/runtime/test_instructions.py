"""The instruction counter (valgrind's callgrind, one launch a measurement) and the recorded burner pair that shows
``step_instructions`` decided under a CPU load on both cores."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from pytest_genai.runtime import instructions
from pytest_genai.runtime.instructions import InstructionCountError, count_step_instructions

ROOT = Path(__file__).resolve().parents[2]
LOOP = "pytest_genai.runtime.instructions:python_loop"
RESULTS = ROOT / "docs" / "results" / "gate_selfcheck"


def test_without_valgrind_the_error_is_one_line_saying_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda _name: None)
    with pytest.raises(InstructionCountError) as err:
        count_step_instructions(LOOP, {"n": 10})
    assert "\n" not in str(err.value)
    assert "install valgrind (Debian: apt-get install valgrind)" in str(err.value)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (Debian: apt-get install "
                                                               "valgrind)")
def test_twice_the_work_counts_about_twice_and_launches_of_the_same_work_agree() -> None:
    one, two, again = (count_step_instructions(LOOP, {"n": n}, steps=3, rounds=3, warmup=1)
                       for n in (10_000, 20_000, 10_000))
    assert len(one.per_step) == 3 and one.before_rounds > 0
    assert 1.9 < two.mean / one.mean < 2.1
    assert abs(again.mean / one.mean - 1) < 0.01
    assert max(one.per_step) / min(one.per_step) - 1 < 0.01  # rounds of one launch agree too


def test_a_worker_that_fails_is_reported_with_its_exit_status() -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (Debian: apt-get install valgrind)")
    with pytest.raises(InstructionCountError, match="exited"):
        count_step_instructions("pytest_genai.runtime.instructions:no_such_factory", steps=1, rounds=1, warmup=0)


RECORDED = sorted(RESULTS.glob("*-instructions-both-loaded.json"))


def test_the_burner_pair_was_recorded_twice() -> None:
    assert len(RECORDED) >= 2, f"recorded instructions self-checks under {RESULTS}: {RECORDED}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_the_recorded_burner_pair_reads_as_recorded_through_the_gate(path: Path) -> None:
    """Counted beside a CPU burner per core (the stall share past the contended level), the same code is unchanged
    (exit 0) and 30% more instructions a step is regressed (exit 1); with the metric not marked contention-free the
    pressure rule would hold the same-code pair undecided."""
    from pytest_genai.claims import load_metrics
    from pytest_genai.claims.check import CONTENDED_SHARE
    from pytest_genai.report.gate import gate_runs
    from pytest_genai.results.registry import metric_info_from
    from pytest_genai.report.run_noise import measured
    from pytest_genai.results.runs import run_from_json
    from pytest_genai.report.thresholds import parse_thresholds

    spec = importlib.util.spec_from_file_location("gate_selfcheck", ROOT / "scripts" / "gate_selfcheck.py")
    selfcheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(selfcheck)
    doc = json.loads(path.read_text(encoding="utf-8"))
    loaded = doc["loaded"]
    assert loaded["burners"] >= 2 and loaded["cpu_contention"]["stall_share_measured"] > CONTENDED_SHARE
    info = metric_info_from(load_metrics())
    assert info["step_instructions"].contention_free
    noise = measured()
    assert noise.for_metric("step_instructions", "dabench") < noise.for_experiment("dabench")
    limits = dataclasses.replace(parse_thresholds("step_instructions=10%"), run_noise=noise)  # as the command's

    def gate(case: dict, registry: dict) -> tuple[int, str]:
        base = selfcheck.instructions_doc(case["baseline_per_step"], loaded["cpu_contention"], "base")
        cur = selfcheck.instructions_doc(case["current_per_step"], loaded["cpu_contention"], "cur")
        result = gate_runs(run_from_json(base, "base"), run_from_json(cur, "cur"), registry, limits)
        row = next(m for m in result.comparison.pairs[0].metrics if m.metric == "step_instructions")
        return result.exit_code, row.status

    cases = {c["slowdown"]: c for c in doc["cases"]}
    assert (cases[0.0]["exit_code"], cases[0.0]["verdict"]) == (0, "unchanged") == gate(cases[0.0], info)
    assert (cases[0.3]["exit_code"], cases[0.3]["verdict"]) == (1, "regressed") == gate(cases[0.3], info)
    assert 1.25 < cases[0.3]["ratio"] < 1.35
    timed_like = dict(info, step_instructions=dataclasses.replace(info["step_instructions"], contention_free=False))
    assert gate(cases[0.0], timed_like) == (3, "inconclusive")
