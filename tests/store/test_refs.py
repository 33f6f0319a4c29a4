"""Run arguments of compare/gate without a store (files, pytest-benchmark storage ids), the two-run --format csv|json
output, and that loading the plugin or the store package imports no SQLAlchemy."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from .test_store import bench, generation_doc, run_doc


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_genai.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "MPLBACKEND": "Agg", "GENAI_STORE": str(cwd / "no-store.sqlite")})


def _machine_folder(root: Path) -> Path:
    from pytest_benchmark.utils import get_machine_id

    folder = root / ".benchmarks" / get_machine_id()
    folder.mkdir(parents=True)
    return folder


def test_compare_n_runs_from_a_file_and_pytest_benchmark_storage(tmp_path: Path) -> None:
    (tmp_path / "v100.json").write_text(json.dumps(generation_doc("v100", "2026-01-01T00:00:00", 100.0)))
    folder = _machine_folder(tmp_path)
    (folder / "0001_a100.json").write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    (folder / "0002_h100.json").write_text(json.dumps(generation_doc("h100", "2026-03-01T00:00:00", 500.0)))
    out = cli("compare", "v100.json", "0001", "storage:latest", "--format", "csv", "--metric", "tokens_per_s",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0] == ["benchmark", "metric", "unit", "v100", "a100", "a100 / v100", "h100", "h100 / v100"]
    assert rows[1] == ["test_decode[v100]", "tokens_per_s", "", "100.0", "250.0", "2.5", "500.0", "5.0"]
    assert not (tmp_path / "no-store.sqlite").exists()  # no store was touched, let alone created


def test_an_unknown_run_word_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    out = cli("compare", "a.json", "yesterday", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "yesterday: neither a run file, a pytest-benchmark storage id (0003, storage:latest) nor a store query" \
        in out.stderr
    out = cli("compare", "a.json", "latest", cwd=tmp_path)
    assert out.returncode == 2 and "no such database; add runs with `pytest-genai store add RUN.json`" in out.stderr


def test_two_run_compare_and_gate_in_csv_and_json(tmp_path: Path) -> None:
    base = run_doc([bench("test_t", metrics={"tokens_per_s": 100.0, "perplexity": 10.0})])
    slow = run_doc([bench("test_t", metrics={"tokens_per_s": 40.0, "perplexity": 10.0})])
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "slow.json").write_text(json.dumps(slow))
    out = cli("compare", "base.json", "slow.json", "--format", "csv", cwd=tmp_path)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [(r["metric"], r["status"], r["ratio"]) for r in rows] == [("tokens_per_s", "regressed", "0.4")]
    every = list(csv.DictReader(io.StringIO(cli("compare", "base.json", "slow.json", "--format", "csv", "--all",
                                                cwd=tmp_path).stdout)))
    assert {r["metric"] for r in every} == {"tokens_per_s", "perplexity"}
    gate = cli("gate", "base.json", "slow.json", "--format", "json", "--no-claims", cwd=tmp_path)
    assert gate.returncode == 1
    doc = json.loads(gate.stdout)
    assert doc["verdict"] == "fail" and doc["exit_code"] == 1 and doc["failures"][0]["metric"] == "tokens_per_s"
    assert doc["rows"][0]["change"] == -0.6


def test_loading_the_plugin_and_the_store_package_imports_no_sqlalchemy() -> None:
    code = ("import sys, pytest_genai.plugin, pytest_genai.store, pytest_genai.store.location, "
            "pytest_genai.store.read, pytest_genai.store.refs; assert 'sqlalchemy' not in sys.modules, 'imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
