"""``pytest-genai reference plot``: a user's runs beside the published numbers on one plot.

The rows here are written by the test for the CPU configuration (named so): not a vendor's numbers.
"""
from __future__ import annotations

import json

import pytest

from pytest_genai.reference.claims import Counterpart
from pytest_genai.reference.plot import pairs
from pytest_genai.reference.row import Provenance, ReferenceRow
from pytest_genai.results.runs import run_from_json

CONFIG = {"model": "llama-3.1-8b", "scale": "tiny", "strategy": "ddp", "micro_batch": 2, "seq_len": 128,
          "precision": "fp32", "world_size": 2, "weights": "random"}
ROUNDS = [90.0, 91.0, 92.0, 93.0, 94.0]


def cpu_test_row(samples_per_s: float) -> ReferenceRow:
    """A reference row written by this test for the CPU configuration: not a vendor's number."""
    where = Provenance("cpu-test-row", "written by tests/reference/test_reference_plot.py", "-", "-", 0, "-")
    return ReferenceRow("cpu-test-row (written by this test, not a vendor's number)", "finetune", "llama-3.1-8b",
                        "full fine-tune", "cpu", "cpu", 2, {}, {"batch_per_card": 2, "precision": "fp32"}, (),
                        {"samples_per_s": samples_per_s}, {"samples_per_s": "samples/s"}, where)


def run_doc(samples_per_s: float, config: dict = CONFIG) -> dict:
    genai = {"schema": "pytest-genai/1", "experiment": "finetune",
             "device": {"kind": "cpu", "generation": "cpu", "name": "test CPU"}, "model": "llama-3.1-8b",
             "config": config, "metrics": {"samples_per_s": samples_per_s},
             "metric_sources": {"samples_per_s": "measured"}, "metric_units": {"samples_per_s": "samples/s"},
             "metric_rounds": {"samples_per_s": [r * samples_per_s / 92.0 for r in ROUNDS]}}
    return {"benchmarks": [{"name": "test_finetune_throughput[cpu]", "extra_info": {"genai": genai}}]}


def test_each_run_stands_beside_the_published_number_of_its_counterpart() -> None:
    counterpart = Counterpart(cpu_test_row(85.0), "samples_per_s",
                              {"micro_batch": 2, "precision": "fp32", "world_size": 2}, ("llama-3.1-8b",))
    runs = [run_from_json(json.loads(json.dumps(run_doc(v))), f"node{i}.json") for i, v in enumerate((92.0, 46.0))]
    runs.append(run_from_json(run_doc(92.0, {**CONFIG, "micro_batch": 4}), "other-config.json"))
    found = pairs(runs, [counterpart])
    assert [(p.run, p.measured, p.published, p.verdict) for p in found] == [
        ("node0.json", 92.0, 85.0, "pass"), ("node1.json", 46.0, 85.0, "fail")]
    assert found[0].floor == 85.0 and found[0].lo == 90.0 and found[0].hi == 94.0  # no floor stated: the number
    assert found[0].benchmark.endswith("· cpu")


def test_the_command_writes_one_png_and_refuses_to_overwrite_a_run(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    from pytest_genai.cli import main

    row = cpu_test_row(85.0).to_json()
    row["settings"] = {"batch_per_card": 2, "precision": "fp32", "seq_len": 128}
    rows = tmp_path / "cpu-test-rows (written by this test).json"
    rows.write_text(json.dumps([row]))
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_doc(92.0)))
    png = tmp_path / "beside.png"
    assert main(["reference", "plot", str(run), "--rows", str(rows), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "92 vs published 85 samples/s: pass" in capsys.readouterr().out
    assert main(["reference", "plot", str(run), "--rows", str(rows), "-o", str(run)]) == 2
    other = tmp_path / "other.json"
    other.write_text(json.dumps(run_doc(92.0, {**CONFIG, "micro_batch": 4})))
    assert main(["reference", "plot", str(other), "--rows", str(rows), "-o", str(tmp_path / "none.png")]) == 0
    assert "nothing to plot" in capsys.readouterr().out and not (tmp_path / "none.png").exists()


def test_history_shades_the_floor_of_a_stored_reference_verdict(tmp_path, capsys) -> None:
    """A stored run carrying its reference verdict puts the publisher's floor on ``history``'s plot, beside the runs
    (the bounds of every claim judged on the metric are shaded)."""
    pytest.importorskip("sqlalchemy")
    from pytest_genai.cli import main
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_document

    row = cpu_test_row(85.0).to_json()
    row["settings"] = {"batch_per_card": 2, "precision": "fp32", "seq_len": 128}
    rows = tmp_path / "cpu-test-rows (written by this test).json"
    rows.write_text(json.dumps([row]))
    run = tmp_path / "run.json"
    run.write_text(json.dumps({**run_doc(92.0), "datetime": "2026-03-01T00:00:00Z"}))
    judged = tmp_path / "judged.json"
    assert main(["reference", "check", str(run), "--rows", str(rows), "--write", str(judged)]) == 0
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        add_document(store, json.loads(judged.read_text()), str(judged))
    capsys.readouterr()
    assert main(["history", "samples_per_s", "--store", url, "--format", "json", "--no-plot"]) == 0
    claims = json.loads(capsys.readouterr().out)["claims"]
    assert [(c["basis"], c["low"]) for c in claims] == [("reference", 85.0)]
