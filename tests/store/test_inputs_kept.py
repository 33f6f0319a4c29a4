"""Outputs never replace what a run argument reads (the file a storage id names, the SQLite store of a query), and a
gate's store query never picks the current run's own stored copy (docs/reliability.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_refs import _machine_folder, cli
from .test_store import bench, generation_doc, run_doc


def _stored(tmp_path: Path, *docs: dict) -> Path:
    store = tmp_path / "r.sqlite"
    for i, doc in enumerate(docs):
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(doc))
        assert cli("store", "add", path.name, "--store", store.name, cwd=tmp_path).returncode == 0
    return store


def test_an_output_over_a_storage_run_is_refused_and_the_run_kept(tmp_path: Path) -> None:
    folder = _machine_folder(tmp_path)
    first = folder / "0001_a.json"
    first.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    (folder / "0002_b.json").write_text(json.dumps(generation_doc("h100", "2026-03-01T00:00:00", 500.0)))
    before = first.read_bytes()
    for command in ("compare", "gate"):
        out = cli(command, "0001", "0002", "-o", str(first.relative_to(tmp_path)), cwd=tmp_path)
        assert out.returncode == 2 and "is the input file" in out.stderr and "Traceback" not in out.stderr
        assert first.read_bytes() == before


@pytest.mark.parametrize("argv", [["compare", "run=1", "run=2", "-o", "r.sqlite"],
                                  ["history", "tokens_per_s", "-o", "r.sqlite"],
                                  ["history", "tokens_per_s", "--plot", "r.sqlite"]])
def test_an_output_over_the_store_is_refused_and_the_store_kept(tmp_path: Path, argv) -> None:
    store = _stored(tmp_path, generation_doc("a100", "2026-02-01T00:00:00", 250.0),
                    generation_doc("h100", "2026-03-01T00:00:00", 500.0))
    before = store.read_bytes()
    out = cli(*argv, "--store", store.name, cwd=tmp_path)
    assert out.returncode == 2 and "r.sqlite: is the input file" in out.stderr and "Traceback" not in out.stderr
    assert store.read_bytes() == before
    assert cli("store", "list", "--store", store.name, cwd=tmp_path).returncode == 0


def test_gate_baseline_latest_skips_the_current_runs_stored_copy(tmp_path: Path) -> None:
    """--genai-store stores the session's run, so it is the newest in the store: `gate --baseline latest` compared
    it with itself and passed a 20% slowdown."""
    base = run_doc([bench("test_t", metrics={"tokens_per_s": 100.0})])
    slow = run_doc([bench("test_t", metrics={"tokens_per_s": 80.0})])
    store = _stored(tmp_path, base, slow)  # run1.json (slow) is the newest stored run
    out = cli("gate", "--baseline", "latest", "run1.json", "--store", store.name, cwd=tmp_path)
    # against itself it would pass (exit 0); a 20% drop of a value without rounds is undecided (exit 3)
    assert out.returncode == 3 and "tokens_per_s" in out.stdout, out.stdout + out.stderr
    alone = tmp_path / "alone"
    alone.mkdir()
    only = _stored(alone, slow)
    out = cli("gate", "--baseline", "latest", "run0.json", "--store", only.name, cwd=alone)
    assert out.returncode == 2 and "the only run" in out.stderr and "compared with it" in out.stderr
