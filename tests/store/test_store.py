"""The results store on every engine (SQLite always; PostgreSQL when a server starts here, see conftest): adding runs
(idempotent, transactional), reading them back, queries, N-run compare, gate and history from the store, and the
schema-version check."""
from __future__ import annotations

import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_genai.results.runs import load_run, run_from_json
from pytest_genai.store.engine import open_store
from pytest_genai.store.errors import StoreError
from pytest_genai.store.read import query_run, run_summaries
from pytest_genai.store.write import add_document, add_file

ROOT = Path(__file__).resolve().parents[2]


def _runfiles() -> Any:
    """tests/report/runfiles.py (the hand-written run builders), loaded by path: test packages are not importable."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("genai_runfiles", ROOT / "tests" / "report" / "runfiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench, run_doc = _runfiles().bench, _runfiles().run_doc
REFERENCE = ROOT / "docs" / "results" / "2026-11-30-cpu-amd-epyc-2vcpu" / "out.json"
REALISTIC = ROOT / "tests" / "report" / "realistic_run.json.gz"
RECORD_FIELDS = ("name", "fullname", "experiment", "device", "model", "config", "metrics", "sources", "units",
                 "labels", "attachments", "param", "environment", "timing")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_genai.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "MPLBACKEND": "Agg"})


def counts(url: str) -> dict[str, int]:
    from pytest_genai.cli.store import table_counts

    with open_store(url) as store:
        return table_counts(store)


def generation_doc(generation: str, when: str, tokens_per_s: float, ppl: float = 12.0) -> dict[str, Any]:
    """A run of two benchmarks on one device generation (cuda), at time ``when``."""
    claim = {"id": "A1.ppl_ratio", "metric": "ppl_ratio", "measured": 1.0, "min": None, "max": 1.035,
             "paper": 1.0308, "verdict": "pass", "message": "m", "basis": "paper", "interval": None}
    elsewhere = {"id": "A1.gaudi2_fake_tokens_per_s", "metric": "tokens_per_s", "measured": None, "min": 30000.0,
                 "max": None, "paper": None, "verdict": "not_applicable", "message": "scoped to gaudi2",
                 "basis": "paper", "interval": None}
    benches = [bench(f"test_decode[{generation}]", "quant", {"id": "decode", "batch": 8},
                     {"tokens_per_s": tokens_per_s, "perplexity": ppl, "ppl_ratio": 1.0},
                     device=("cuda", generation), median=1.0 / tokens_per_s, claims=[claim]),
               bench(f"test_prefill[{generation}]", "quant", {"id": "prefill", "batch": 1},
                     {"tokens_per_s": tokens_per_s * 10}, device=("cuda", generation), claims=[elsewhere])]
    doc = run_doc(benches)
    doc["datetime"] = when
    doc["commit_info"] = {"id": f"{generation}{when[-5:-3]}" + "0" * 30, "branch": "main", "dirty": False}
    return doc


def test_reference_run_round_trips_and_adding_it_again_is_a_no_op(store_url: str) -> None:
    with open_store(store_url) as store:
        first = add_file(store, REFERENCE)
        again = add_file(store, REFERENCE)
        assert first.new and not again.new and again.run_id == first.run_id
        stored = query_run(store, "latest")
    file_run = load_run(REFERENCE)
    assert len(stored.records) == len(file_run.records) == 45
    for mine, theirs in zip(stored.records, file_run.records):
        for name in RECORD_FIELDS:
            assert getattr(mine, name) == getattr(theirs, name), (mine.name, name)
        assert {c["id"] for c in mine.claims} == {c["id"] for c in theirs.claims}
    assert stored.stack == file_run.stack and stored.absent == file_run.absent
    rows = counts(store_url)
    assert rows["runs"] == 1 and rows["benchmarks"] == 45 and rows["metrics"] == 895  # 850 genai + 45 medians
    assert rows["claims"] == 80
    with open_store(store_url) as store:  # the same run indented differently is the same run
        reindented = json.loads(REFERENCE.read_text())
        assert not add_document(store, reindented, "copy.json").new


def test_every_round_and_interval_is_kept(store_url: str) -> None:
    from sqlalchemy import select

    doc = json.loads(REFERENCE.read_text())
    with open_store(store_url) as store:
        add_document(store, doc, "out.json")
        m = store.table("metrics")
        rows = store.transaction(lambda c: c.execute(select(m.c.name, m.c.rounds_json, m.c.interval_json)
                                                      .where(m.c.rounds_json.isnot(None))).all())
    recorded = sum(len(v) for b in doc["benchmarks"] for v in b["extra_info"]["genai"]["metric_rounds"].values())
    timing = sum(len(b["stats"]["data"]) for b in doc["benchmarks"])
    assert sum(len(json.loads(r.rounds_json)) for r in rows) == recorded + timing == 149 + 103
    assert any(r.interval_json for r in rows if r.name == "scaling_throughput_ratio")
    with open_store(store_url) as store:  # and a stored run reads them back, as the file does (gate intervals)
        stored = {r.label: r.rounds for r in query_run(store, "latest").records}
    from_file = {r.label: r.rounds for r in run_from_json(doc, "out.json").records}
    assert stored == from_file and sum(len(v) for rounds in stored.values() for v in rounds.values()) > 100


def test_non_finite_values_survive(store_url: str) -> None:
    doc = run_doc([bench("test_nan", metrics={"perplexity": float("nan"), "tokens_per_s": float("inf")})])
    with open_store(store_url) as store:
        add_document(store, doc, "nan.json")
        rec = query_run(store, "latest").records[0]
    assert math.isnan(rec.metrics["perplexity"]) and rec.metrics["tokens_per_s"] == float("inf")


def test_a_failed_add_leaves_the_store_as_it_was(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_genai.store.write as write

    with open_store(store_url) as store:
        add_document(store, generation_doc("a100", "2026-01-01T00:00:00", 100.0), "a.json")
    before = counts(store_url)

    def broken(*args: Any) -> Any:
        raise RuntimeError("disk pulled out mid-import")

    monkeypatch.setattr(write, "claim_numbers", broken)  # fails after the run, benchmarks and metrics were inserted
    with open_store(store_url) as store, pytest.raises(RuntimeError, match="mid-import"):
        add_document(store, generation_doc("h100", "2026-02-01T00:00:00", 200.0), "h.json")
    assert counts(store_url) == before


KILLED_IMPORT = """
import sys, time
import pytest_genai.store.write as write
from pytest_genai.store.engine import open_store
real = write.claim_numbers
def stall(*args):
    open(sys.argv[2], "w").close()  # the run, benchmarks and metrics are inserted, not committed
    time.sleep(600)
write.claim_numbers = stall
with open_store(sys.argv[1]) as store:
    write.add_file(store, sys.argv[3])
"""


def test_a_killed_import_leaves_the_store_as_it_was(store_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "inside"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_IMPORT, store_url, str(marker), str(REFERENCE)])
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the import never reached the middle of its transaction"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = counts(store_url)
    assert rows["runs"] == rows["benchmarks"] == rows["metrics"] == rows["claims"] == 0
    with open_store(store_url) as store:  # and the store takes the run afterwards
        assert add_file(store, REFERENCE).new


def test_a_newer_schema_version_is_refused(store_url: str) -> None:
    from sqlalchemy import update

    with open_store(store_url) as store:
        meta = store.table("store_meta")
        store.transaction(lambda c: c.execute(update(meta).where(meta.c.key == "schema_version").values(value="7")))
    with pytest.raises(StoreError, match=r"has schema version 7, but this pytest-genai \(.*\) knows versions up to 1; "
                                         r"a newer pytest-genai wrote it — upgrade pytest-genai"):
        open_store(store_url)
    result = cli("store", "list", "--store", store_url)
    assert result.returncode == 2 and "has schema version 7" in result.stderr and "Traceback" not in result.stderr


def _three_generations(url: str) -> None:
    with open_store(url) as store:
        add_document(store, generation_doc("v100", "2026-01-01T00:00:00", 100.0), "v100.json")
        add_document(store, generation_doc("a100", "2026-02-01T00:00:00", 260.0), "a100-old.json")
        add_document(store, generation_doc("a100", "2026-03-01T00:00:00", 250.0), "a100.json")
        add_document(store, generation_doc("h100", "2026-04-01T00:00:00", 600.0, ppl=12.5), "h100.json")


def test_queries_latest_and_best(store_url: str) -> None:
    from pytest_genai.claims import default_metric_info

    _three_generations(store_url)
    info, _ = default_metric_info()
    with open_store(store_url) as store:
        assert [r["id"] for r in run_summaries(store)] == [4, 3, 2, 1]
        latest = query_run(store, "generation=a100 latest")
        best = query_run(store, "generation=a100 best", info)
        assert query_run(store, "latest").generations == ("h100",)
        with pytest.raises(StoreError, match="no run .* matches"):
            query_run(store, "generation=b200")
        with pytest.raises(StoreError, match="'gen=a100' is not a filter"):
            query_run(store, "gen=a100")
    assert latest.records[0].metrics["tokens_per_s"] == 250.0  # the newest a100 run
    assert best.records[0].metrics["tokens_per_s"] == 260.0  # the best a100 value (higher is better)
    assert "best of 2 run(s)" in best.source


def test_best_takes_each_metrics_rounds_and_timing_from_the_run_its_value_came_from(store_url: str) -> None:
    """``best`` picks the older a100 run's 260 tokens/s: its rounds (and, for the median round time, its timing)
    come along, so an interval judged on them describes 260, not the newest run's 250."""
    from pytest_genai.claims import default_metric_info

    docs = []
    for name, when, tps in (("a100-old.json", "2026-02-01T00:00:00", 260.0), ("a100.json", "2026-03-01T00:00:00", 250.0)):
        doc = generation_doc("a100", when, tps)
        decode = doc["benchmarks"][0]
        decode["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": [tps - 1, tps, tps + 1]}
        decode["stats"]["data"] = [1.0 / tps] * 3
        docs.append((name, doc))
    info, _ = default_metric_info()
    with open_store(store_url) as store:
        for name, doc in docs:
            add_document(store, doc, name)
        best = query_run(store, "generation=a100 best", info)
    decode = next(r for r in best.records if r.name == "test_decode[a100]")
    assert decode.metrics["tokens_per_s"] == 260.0 and decode.rounds["tokens_per_s"] == (259.0, 260.0, 261.0)
    assert decode.metrics["benchmark_median_s"] == pytest.approx(1 / 260)
    assert decode.rounds["benchmark_median_s"] == pytest.approx((1 / 260,) * 3)
    assert decode.timing["median"] == pytest.approx(1 / 260)


def test_compare_n_runs_in_three_formats(store_url: str) -> None:
    _three_generations(store_url)
    base = ["compare", "generation=v100", "generation=a100 latest", "generation=h100", "--store", store_url]
    md = cli(*base, "--metric", "tokens_per_s")
    assert md.returncode == 0, md.stderr
    assert "| v100 " in md.stdout and "a100 / v100" in md.stdout and "h100 / v100" in md.stdout
    assert "test_decode[v100]" in md.stdout and "2.5x" in md.stdout and "6x" in md.stdout
    csv_out = cli(*base, "--format", "csv")
    lines = csv_out.stdout.splitlines()
    assert lines[0] == "benchmark,metric,unit,v100,a100,a100 / v100,h100,h100 / v100"
    assert "test_decode[v100],tokens_per_s,,100.0,250.0,2.5,600.0,6.0" in lines
    doc = json.loads(cli(*base, "--format", "json").stdout)
    assert [r["label"] for r in doc["runs"]] == ["v100", "a100", "h100"]
    row = next(r for r in doc["rows"] if r["metric"] == "tokens_per_s" and "decode" in r["benchmark"])
    assert row["values"] == [100.0, 250.0, 600.0] and row["ratios_to_first"] == [1.0, 2.5, 6.0]


def test_gate_takes_its_baseline_from_the_store(store_url: str, tmp_path: Path) -> None:
    _three_generations(store_url)
    same = tmp_path / "a100-now.json"
    same.write_text(json.dumps(generation_doc("a100", "2026-05-01T00:00:00", 255.0)))
    slow = tmp_path / "a100-slow.json"
    slow.write_text(json.dumps(generation_doc("a100", "2026-05-01T00:00:00", 100.0)))
    ok = cli("gate", "--baseline", "generation=a100 latest", str(same), "--store", store_url, "--no-claims")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "store run 3 (generation=a100 latest)" in ok.stdout and "**PASS**" in ok.stdout
    best = cli("gate", "--baseline", "generation=a100 best", str(same), "--store", store_url, "--no-claims",
               "--max-regression", "tokens_per_s=1%")
    # 255 vs the best 260: past 1%, but one value a side within 2x: undecided (exit 3), never passed
    assert best.returncode == 3 and "tokens_per_s" in best.stdout
    bad = cli("gate", "--baseline", "generation=a100 latest", str(slow), "--store", store_url, "--no-claims",
              "--format", "json")
    assert bad.returncode == 1
    verdict = json.loads(bad.stdout)
    assert verdict["verdict"] == "fail" and any(f["metric"] == "tokens_per_s" for f in verdict["failures"])


@pytest.mark.slow
def test_history_prints_the_series_and_plots_it(store_url: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _three_generations(store_url)
    out = cli("history", "tokens_per_s", "--config", "decode", "--store", store_url, "--plot", str(tmp_path / "t.png"))
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ")]
    values = [line.split("|")[7].strip() for line in rows[2:]]  # after the header and its rule
    assert values == ["100", "260", "250", "600"]  # oldest first
    assert (tmp_path / "t.png").stat().st_size > 10_000
    ppl = cli("history", "ppl_ratio", "--store", store_url, "--format", "json", "--no-plot")
    doc = json.loads(ppl.stdout)
    assert len(doc["points"]) == 4 and doc["claims"][0]["claim_id"] == "A1.ppl_ratio"
    assert doc["claims"][0]["high"] == 1.035
    tokens = json.loads(cli("history", "tokens_per_s", "--store", store_url, "--format", "json", "--no-plot").stdout)
    assert len(tokens["points"]) == 8 and tokens["claims"] == []  # a claim that did not apply draws no band
    none = cli("history", "tokens_per_s", "--device-generation", "b200", "--store", store_url)
    assert none.returncode == 2 and "no value of 'tokens_per_s' matching generation=b200" in none.stderr


def test_store_add_imports_pytest_benchmark_storage_folders(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    folder.mkdir(parents=True)
    realistic = json.loads(gzip.decompress(REALISTIC.read_bytes()))
    (folder / "0001_first.json").write_text(json.dumps(realistic))
    (folder / "0002_second.json").write_text(REFERENCE.read_text())
    out = cli("store", "add", str(tmp_path / ".benchmarks"), "--store", store_url)
    assert out.returncode == 0, out.stderr
    assert "0001_first.json: added as run 1" in out.stdout and "0002_second.json: added as run 2" in out.stdout
    from pytest_genai.store.location import store_label

    assert f"0002_second.json: added as run 2 (" in out.stdout and f"rows) in {store_label(store_url)}\n" in out.stdout
    again = cli("store", "add", str(tmp_path / ".benchmarks"), "--store", store_url)
    assert "0 run(s) added, 2 already stored" in again.stderr
    listed = cli("store", "list", "--store", store_url, "--format", "csv")
    assert listed.stderr == f"store {store_label(store_url)}: 2 run(s)\n" and listed.stdout.startswith("id,")
    assert counts(store_url)["runs"] == 2


def test_store_add_refuses_a_bad_file_and_writes_nothing(store_url: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": [')
    out = cli("store", "add", str(REFERENCE), str(tmp_path / "missing.json"), "--store", store_url)
    assert out.returncode == 2 and "missing.json: no such file or folder" in out.stderr
    out = cli("store", "add", str(bad), "--store", store_url)
    assert out.returncode == 2 and "bad.json: invalid JSON" in out.stderr
    assert counts(store_url)["runs"] == 0
    # a bad file after a good one: nothing is added (every file is read before the store is written)
    out = cli("store", "add", str(REFERENCE), str(bad), "--store", store_url)
    assert out.returncode == 2 and "bad.json: invalid JSON" in out.stderr and "added as run" not in out.stdout
    assert counts(store_url)["runs"] == 0


def test_store_add_takes_odd_numbers_and_texts_the_report_reader_takes(store_url: str, tmp_path: Path) -> None:
    """A round, a timing sample or a claim's number too large for a float, and a claim's text field given as a
    list, are read by ``report`` (odd rounds ignored); ``store add`` stores the run as well, never a traceback."""
    claim = {"id": "A1.ppl_ratio", "metric": ["ppl_ratio"], "measured": 10**400, "min": None, "max": 1.035,
             "paper": 1.0308, "verdict": "pass", "message": {"text": "m"}, "basis": "paper", "interval": None}
    doc = run_doc([bench("test_odd", metrics={"tokens_per_s": 5.0}, claims=[claim], median=0.5)])
    genai = doc["benchmarks"][0]["extra_info"]["genai"]
    genai["metric_rounds"] = {"tokens_per_s": [10**400, 1.0]}
    doc["benchmarks"][0]["stats"]["data"] = [10**400, 1.0]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    assert cli("report", str(path)).returncode == 0
    out = cli("store", "add", str(path), "--store", store_url)
    assert out.returncode == 0, out.stderr
    with open_store(store_url) as store:
        rec = query_run(store, "latest").records[0]
        claims = store.transaction(lambda c: c.execute(store.table("claims").select()).mappings().all())
    assert rec.metrics["tokens_per_s"] == 5.0 and not rec.rounds
    (row,) = [c for c in claims if c["claim_id"] == "A1.ppl_ratio"]
    assert row["measured"] is None and row["metric"] == '["ppl_ratio"]' and row["message"] == '{"text":"m"}'


def test_schema_v1_json_imports() -> None:
    """Documents of the JSON contract pytest-genai/1 (the only one so far) import; the run records the schema."""
    from pytest_genai.store.ingest import run_rows

    rows = run_rows(json.loads(REFERENCE.read_text()), "out.json")
    assert rows.run["json_schema"] == "pytest-genai/1" and rows.row_count == 1022
    assert run_from_json(run_doc([bench("t")]), "x").records


def test_an_older_schema_is_migrated_on_open(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store of version 1 opened by a pytest-genai that knows version 2 runs the 1 -> 2 step once, in the opening
    transaction, and records version 2; the runs it held are still there."""
    import pytest_genai.store.engine as engine
    from pytest_genai.store.engine import stored_version

    with open_store(store_url) as store:
        add_document(store, generation_doc("a100", "2026-02-01T00:00:00", 250.0), "a.json")
    steps: list[int] = []

    def step(conn: Any) -> None:
        steps.append(1)
        conn.exec_driver_sql("CREATE TABLE added_in_v2 (id INTEGER PRIMARY KEY)")

    monkeypatch.setattr(engine, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(engine, "MIGRATIONS", {1: step})
    with open_store(store_url) as store:
        assert store.transaction(lambda c: stored_version(c, store.md)) == 2
        assert query_run(store, "latest").records[0].metrics["tokens_per_s"] == 250.0
    with open_store(store_url):
        pass
    assert steps == [1]
    monkeypatch.setattr(engine, "MIGRATIONS", {})
    monkeypatch.setattr(engine, "SCHEMA_VERSION", 3)
    with pytest.raises(StoreError, match="schema version 2 has no migration to 3"):
        open_store(store_url)
