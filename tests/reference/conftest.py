"""The CPU configuration the reference tests judge, and the reference row they write for it themselves.

On the CPU there is no vendor number: each row here is written by the test that asks for it and names it so;
nothing here is a published measurement.
"""
from __future__ import annotations

import json

import pytest

from pytest_genai.reference.row import Provenance, ReferenceRow
from pytest_genai.results.runs import run_from_json

CONFIG = {"model": "llama-3.1-8b", "scale": "tiny", "strategy": "ddp", "micro_batch": 2, "seq_len": 128,
          "precision": "fp32", "world_size": 2, "weights": "random"}
#: a run's samples/s rounds at 92 samples/s (their median); other rates scale them
ROUNDS = [90.0, 91.0, 92.0, 93.0, 94.0]


@pytest.fixture
def cpu_test_row(request: pytest.FixtureRequest):
    """``row(published)``: a reference row for the CPU configuration, naming the test file that wrote it."""
    def row(samples_per_s: float) -> ReferenceRow:
        where = Provenance("cpu-test-row", f"written by tests/reference/{request.path.name}", "-", "-", 0, "-")
        return ReferenceRow("cpu-test-row (written by this test, not a vendor's number)", "finetune", "llama-3.1-8b",
                            "full fine-tune", "cpu", "cpu", 2, {}, {"batch_per_card": 2, "precision": "fp32"}, (),
                            {"samples_per_s": samples_per_s}, {"samples_per_s": "samples/s"}, where)

    return row


@pytest.fixture
def cpu_run_doc():
    """``doc(samples_per_s=92.0, **config)``: the benchmark JSON of one CPU fine-tune run of :data:`CONFIG` (keys given
    replace its values), its rounds scaled from :data:`ROUNDS` to the rate."""
    def doc(samples_per_s: float = 92.0, **config) -> dict:
        genai = {"schema": "pytest-genai/1", "experiment": "finetune",
                 "device": {"kind": "cpu", "generation": "cpu", "name": "test CPU"}, "model": "llama-3.1-8b",
                 "config": {**CONFIG, **config}, "metrics": {"samples_per_s": samples_per_s},
                 "metric_sources": {"samples_per_s": "measured"}, "metric_units": {"samples_per_s": "samples/s"},
                 "metric_rounds": {"samples_per_s": [r * samples_per_s / 92.0 for r in ROUNDS]}}
        return {"benchmarks": [{"name": "test_finetune_throughput[cpu]", "extra_info": {"genai": genai}}]}

    return doc


@pytest.fixture
def cpu_run(cpu_run_doc):
    """``run(samples_per_s=92.0, name="cpu-run.json", **config)``: :func:`cpu_run_doc`'s document read as a run."""
    def run(samples_per_s: float = 92.0, name: str = "cpu-run.json", **config):
        return run_from_json(json.loads(json.dumps(cpu_run_doc(samples_per_s, **config))), name)

    return run


@pytest.fixture
def cpu_rows_file(tmp_path, cpu_test_row):
    """A rows file for ``--rows``: the CPU row published at 85 samples/s, with the settings a counterpart needs."""
    row = cpu_test_row(85.0).to_json()
    row["settings"] = {"batch_per_card": 2, "precision": "fp32", "seq_len": 128}
    rows = tmp_path / "cpu-test-rows (written by this test).json"
    rows.write_text(json.dumps([row]))
    return rows
