"""Two processes writing to one SQLite store at once lose nothing (WAL, BEGIN IMMEDIATE, retries): two pytest
sessions with --genai-store, and two `pytest-genai store add` processes adding many runs each."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_genai.store.engine import open_store
from pytest_genai.store.read import run_summaries

SESSION_TEST = """
import pytest

@pytest.mark.parametrize("batch", [1, 2, 4])
def test_decode(benchmark, genai, cpu, batch):
    genai.start(experiment="quant", device=cpu, config={"id": f"b{batch}", "batch": batch}, model="tiny")
    benchmark.pedantic(lambda: sum(range(1000)), rounds=3)
    genai.metric("tokens_per_s", 100.0 * batch)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}


def test_two_pytest_sessions_store_into_one_sqlite_file_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "test_decode.py").write_text(SESSION_TEST)
    procs = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--genai-devices", "cpu",
                               "--benchmark-json", "out.json", "--genai-store", url, "test_decode.py"],
                              cwd=tmp_path / name, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=_env())
             for name in ("a", "b")]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for proc, out in zip(procs, outputs):
        assert proc.returncode == 0, out
        assert "genai store: run " in out and " added" in out, out
    with open_store(url) as store:
        runs = run_summaries(store)
    assert len(runs) == 2 and all(r["benchmarks"] == 3 for r in runs)
    # the session stored its --benchmark-json document: adding that file again is a no-op
    again = subprocess.run([sys.executable, "-m", "pytest_genai.cli", "store", "add", str(tmp_path / "a" / "out.json"),
                            "--store", url], capture_output=True, text=True, env=_env())
    assert "already stored" in again.stdout, again.stdout + again.stderr


WRITER = """
import json, sys
from pytest_genai.store.engine import open_store
from pytest_genai.store.write import add_document
doc = json.load(open(sys.argv[2]))
with open_store(sys.argv[1]) as store:
    for i in range(int(sys.argv[4])):
        if i == int(sys.argv[4]) // 2:  # both writers add the same run at about the same time
            add_document(store, {**doc, "datetime": "2026-02-01T00:00:00+00:00", "writer": "both"}, "shared.json")
        doc["datetime"] = f"2026-01-01T00:{i:02d}:00+00:00"
        doc["writer"] = sys.argv[3]  # a distinct document (content hash) per writer and round
        add_document(store, doc, f"{sys.argv[3]}-{i}.json")
"""


@pytest.mark.parametrize("rounds", [25])
def test_two_writers_hammering_one_store_lose_nothing(tmp_path: Path, rounds: int, store_url: str) -> None:
    """On SQLite (the issue's case) and on PostgreSQL; each writer also adds one shared run (the same content) at
    the same moment, which must be stored once."""
    reference = Path(__file__).resolve().parents[2] / "docs" / "results" / "2026-11-30-cpu-amd-epyc-2vcpu" / "out.json"
    doc = json.loads(reference.read_text())
    doc["benchmarks"] = doc["benchmarks"][:8]  # 8 benchmarks, ~150 rows per run: many short transactions
    source = tmp_path / "run.json"
    source.write_text(json.dumps(doc))
    url = store_url
    open_store(url).close()  # created first, so both writers meet an existing store
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(source), name, str(rounds)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env())
             for name in ("w1", "w2")]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    with open_store(url) as store:
        runs = run_summaries(store)
        from pytest_genai.cli.store import table_counts

        rows = table_counts(store)
    assert len(runs) == 2 * rounds + 1  # each writer's runs, and the shared one once
    assert rows["benchmarks"] == (2 * rounds + 1) * 8
    if url.startswith("sqlite"):
        with open_store(url) as store:
            mode = store.transaction(lambda c: c.exec_driver_sql("PRAGMA journal_mode").scalar())
        assert mode == "wal"
