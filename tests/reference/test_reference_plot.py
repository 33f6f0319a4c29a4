"""``pytest-genai reference plot``: a user's runs beside the published numbers on one plot.

The rows here are written by the test for the CPU configuration (named so): not a vendor's numbers.
"""
from __future__ import annotations

import json

import pytest

from pytest_genai.reference.claims import Counterpart
from pytest_genai.reference.plot import pairs


def test_each_run_stands_beside_the_published_number_of_its_counterpart(cpu_test_row, cpu_run) -> None:
    counterpart = Counterpart(cpu_test_row(85.0), "samples_per_s",
                              {"micro_batch": 2, "precision": "fp32", "world_size": 2}, ("llama-3.1-8b",))
    runs = [cpu_run(v, f"node{i}.json") for i, v in enumerate((92.0, 46.0))]
    runs.append(cpu_run(92.0, "other-config.json", micro_batch=4))
    found = pairs(runs, [counterpart])
    assert [(p.run, p.measured, p.published, p.verdict) for p in found] == [
        ("node0.json", 92.0, 85.0, "pass"), ("node1.json", 46.0, 85.0, "fail")]
    assert found[0].floor == 85.0 and found[0].lo == 90.0 and found[0].hi == 94.0  # no floor stated: the number
    assert found[0].benchmark.endswith("· cpu")


def test_the_command_writes_one_png_and_refuses_to_overwrite_a_run(tmp_path, capsys, cpu_rows_file,
                                                                   cpu_run_doc) -> None:
    pytest.importorskip("matplotlib")
    from pytest_genai.cli import main

    rows = cpu_rows_file
    run = tmp_path / "run.json"
    run.write_text(json.dumps(cpu_run_doc(92.0)))
    png = tmp_path / "beside.png"
    assert main(["reference", "plot", str(run), "--rows", str(rows), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "92 vs published 85 samples/s: pass" in capsys.readouterr().out
    assert main(["reference", "plot", str(run), "--rows", str(rows), "-o", str(run)]) == 2
    other = tmp_path / "other.json"
    other.write_text(json.dumps(cpu_run_doc(92.0, micro_batch=4)))
    assert main(["reference", "plot", str(other), "--rows", str(rows), "-o", str(tmp_path / "none.png")]) == 0
    assert "nothing to plot" in capsys.readouterr().out and not (tmp_path / "none.png").exists()


def test_history_shades_the_floor_of_a_stored_reference_verdict(tmp_path, capsys, cpu_rows_file, cpu_run_doc) -> None:
    """A stored run carrying its reference verdict puts the publisher's floor on ``history``'s plot, beside the runs
    (the bounds of every claim judged on the metric are shaded)."""
    pytest.importorskip("sqlalchemy")
    from pytest_genai.cli import main
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_document

    rows = cpu_rows_file
    run = tmp_path / "run.json"
    run.write_text(json.dumps({**cpu_run_doc(92.0), "datetime": "2026-03-01T00:00:00Z"}))
    judged = tmp_path / "judged.json"
    assert main(["reference", "check", str(run), "--rows", str(rows), "--write", str(judged)]) == 0
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        add_document(store, json.loads(judged.read_text()), str(judged))
    capsys.readouterr()
    assert main(["history", "samples_per_s", "--store", url, "--format", "json", "--no-plot"]) == 0
    claims = json.loads(capsys.readouterr().out)["claims"]
    assert [(c["basis"], c["low"]) for c in claims] == [("reference", 85.0)]
