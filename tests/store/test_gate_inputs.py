"""Inputs the gate refuses (exit 2, one line naming file or store, benchmark and metric; never a traceback, never
exit 1), and a stored run that gates as its file does."""
from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_genai.store.engine import open_store
from pytest_genai.store.write import add_document

from .test_gate_baselines import _runfiles, bench, run_doc, timed_doc

ROOT = Path(__file__).resolve().parents[2]


def _gate(*args: str) -> tuple[int, str, str]:
    from pytest_genai.cli.report import gate_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = gate_main([*args, "--no-claims"])
    return code, out.getvalue(), err.getvalue()


def _file(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _step(value: float, rounds: list[float] | None = None, unit: str = "s", interval=None) -> dict[str, Any]:
    entry = bench("test_step", "dabench", {"id": "s"}, {"step_time_s": value}, units={"step_time_s": unit})
    genai = entry["extra_info"]["genai"]
    if rounds is not None:
        genai["metric_rounds"] = {"step_time_s": rounds}
    if interval is not None:
        genai["metric_intervals"] = {"step_time_s": {"lo": interval[0], "hi": interval[1], "level": 0.95, "n": 9,
                                                     "method": "test"}}
    return run_doc([entry])


@pytest.mark.parametrize(("doc", "words"), [
    (_step(0.5, [0.10, 0.11, 0.12]), "lies outside its own rounds [0.1, 0.12]"),
    (_step(0.0), "a time of 0.0 s is not a measurement"),
    (_step(-1.0), "a time of -1.0 s is not a measurement"),
    (_step(0.1, [0.1, 0.0, 0.2]), "a round of 0 s is not a measured time"),
    (_step(0.1, interval=(0.2, 0.3)), "lies outside its own interval [0.2, 0.3]"),
])
def test_a_run_that_contradicts_itself_is_refused_on_either_side(tmp_path: Path, doc, words) -> None:
    good = _file(tmp_path, "good.json", _step(0.11, [0.10, 0.11, 0.12]))
    bad = _file(tmp_path, "bad.json", doc)
    for args in ((good, bad), (bad, good)):
        code, out, err = _gate(*args)
        assert code == 2 and words in err and "Traceback" not in err, err
        assert "benchmark test_step, metric step_time_s" in err and "bad.json" in err
        assert len(err.strip().splitlines()) == 1


def test_thresholds_that_no_drop_can_reach_are_refused(tmp_path: Path) -> None:
    base = _file(tmp_path, "b.json", run_doc([bench("t", metrics={"tokens_per_s": 100.0})]))
    cur = _file(tmp_path, "c.json", run_doc([bench("t", metrics={"tokens_per_s": 10.0})]))
    code, _, err = _gate(base, cur, "--max-regression", "*=500%")
    assert code == 2 and "'tokens_per_s' (higher is better) can never be reached" in err
    # a lower-is-better metric may be allowed to double
    assert _gate(base, cur, "--max-regression", "step_time_s=150%")[0] == 1


def test_the_same_unit_spelled_alike_on_both_sides_is_compared(tmp_path: Path) -> None:
    """Both runs in `tok/s` (not the registry's `tokens/s`, no conversion known): compared, not 'units differ'."""
    doc = run_doc([bench("t", metrics={"tokens_per_s": 100.0}, units={"tokens_per_s": "tok/s"})])
    a, b = _file(tmp_path, "a.json", doc), _file(tmp_path, "b.json", doc)
    code, out, _ = _gate(a, b)
    assert code == 0 and "units differ" not in out


def test_optional_metrics_missing_on_one_side_are_listed_not_failed(tmp_path: Path) -> None:
    base = _file(tmp_path, "b.json", run_doc([bench("t", metrics={"tokens_per_s": 100.0, "energy_j": 2.0,
                                                                  "tokens_per_j": 50.0})]))
    cur = _file(tmp_path, "c.json", run_doc([bench("t", metrics={"tokens_per_s": 100.0})]))
    code, out, _ = _gate(base, cur)
    assert code == 0, out
    assert "Optional metrics recorded on one side only (listed, not failed): t energy_j" in out
    # a metric that is not optional still fails when it disappears
    code, out, _ = _gate(base, _file(tmp_path, "d.json", run_doc([bench("t", metrics={"energy_j": 2.0})])))
    assert code == 1


def test_the_verdict_is_printed_before_an_unwritable_output(tmp_path: Path) -> None:
    base = _file(tmp_path, "b.json", run_doc([bench("t", metrics={"tokens_per_s": 100.0})]))
    cur = _file(tmp_path, "c.json", run_doc([bench("t", metrics={"tokens_per_s": 10.0})]))
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc: a folder no one, root included, can create a file in")
    code, out, err = _gate(base, cur, "-o", "/proc/gate.md")
    assert code == 2 and out.startswith("**FAIL** (exit 1)") and "cannot write" in err, (out[:200], err)


# --- the store ---------------------------------------------------------------------------------------------------

def _stored(store_url: str, *docs: dict[str, Any]) -> None:
    with open_store(store_url) as store:
        for i, doc in enumerate(docs):
            add_document(store, doc, f"r{i}.json")


def _sqlite(store_url: str) -> str:
    assert store_url.startswith("sqlite:///")
    return store_url[len("sqlite:///"):]


@pytest.mark.parametrize(("sql", "words"), [
    ("UPDATE metrics SET rounds_json = 'not json'", "rounds: not valid JSON"),
    ("UPDATE metrics SET rounds_json = '[1, null, 2]'", "a round: None is not a number"),
    ("UPDATE metrics SET rounds_json = '{\"a\": 1}'", "rounds: holds a JSON dict, expected a list"),
    ("UPDATE metrics SET value = NULL, nonfinite = NULL", "the stored value is NULL"),
    ("UPDATE metrics SET value = 'fast'", "'fast' is not a number"),
    ("UPDATE benchmarks SET config_json = '{bad'", "config: not valid JSON"),
    ("UPDATE benchmarks SET labels_json = '[1]'", "labels: holds a JSON list, expected a dict"),
    ("UPDATE benchmarks SET attachments_json = '3'", "attachments: holds a JSON int, expected a dict"),
    ("UPDATE runs SET stack_json = '{'", "stack: not valid JSON"),
])
def test_a_corrupt_store_row_is_one_line_and_exit_2(tmp_path: Path, sql: str, words: str) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    _stored(url, timed_doc("2026-03-01T00:00:00Z", 100.0, [99.0, 100.0, 101.0]))
    with sqlite3.connect(_sqlite(url)) as conn:
        conn.execute(sql)
    cur = _file(tmp_path, "c.json", timed_doc("2026-04-01T00:00:00Z", 80.0, [79.0, 80.0, 81.0]))
    code, out, err = _gate("--baseline", "generation=h100 latest", cur, "--store", url)
    assert code == 2 and words in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "run 1" in err


def test_last_n_converts_runs_recorded_in_other_units(tmp_path: Path) -> None:
    """The newest run in s with a nan, the older ones in ms: a 50% slowdown read as a 99.85% improvement."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"

    def stepdoc(when: str, value: float, unit: str) -> dict[str, Any]:
        doc = run_doc([bench("test_step", "dabench", {"id": "s"}, {"step_time_s": value, "tokens_per_s": 10.0},
                             units={"step_time_s": unit}, device=("cuda", "h100"))])
        doc["datetime"] = when
        return doc

    _stored(url, stepdoc("2026-03-01T00:00:00Z", 100.0, "ms"), stepdoc("2026-03-02T00:00:00Z", 104.0, "ms"),
            stepdoc("2026-03-03T00:00:00Z", float("nan"), "s"))
    cur = _file(tmp_path, "c.json", stepdoc("2026-04-01T00:00:00Z", 0.153, "s"))
    code, out, err = _gate("--baseline", "generation=h100 last:3", cur, "--store", url, "--format", "json",
                           "--all")
    row = next(r for r in json.loads(out)["rows"] if r["metric"] == "step_time_s")
    assert row["baseline"] == pytest.approx(0.102) and row["verdict"] != "improved", row


def test_last_n_refuses_runs_on_different_device_models_unless_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"

    def cpu(when: str, name: str, tps: float) -> dict[str, Any]:
        entry = bench("test_q", "quant", {"id": "q"}, {"tokens_per_s": tps}, device=("cpu", "cpu"))
        entry["extra_info"]["genai"]["device"]["name"] = name
        doc = run_doc([entry])
        doc["datetime"] = when
        return doc

    _stored(url, cpu("2026-03-01T00:00:00Z", "AMD EPYC 7B13", 100.0), cpu("2026-03-02T00:00:00Z", "Intel Xeon", 60.0))
    cur = _file(tmp_path, "c.json", cpu("2026-04-01T00:00:00Z", "AMD EPYC 7B13", 80.0))
    code, _, err = _gate("--baseline", "generation=cpu last:2", cur, "--store", url)
    assert code == 2 and "ran on different device models" in err and "'mixed'" in err
    assert _gate("--baseline", "generation=cpu last:2 mixed", cur, "--store", url)[0] in (0, 1, 3)


@pytest.mark.parametrize("query", ["generation=h100 last:３", "run=１"])
def test_non_ascii_digits_in_a_query_are_refused(tmp_path: Path, query: str) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    _stored(url, timed_doc("2026-03-01T00:00:00Z", 100.0, [99.0, 100.0, 101.0]))
    cur = _file(tmp_path, "c.json", timed_doc("2026-04-01T00:00:00Z", 100.0, [99.0, 100.0, 101.0]))
    code, _, err = _gate("--baseline", query, cur, "--store", url)
    assert code == 2 and "Traceback" not in err


def _real_runs() -> list[Path]:
    return sorted(p for p in (ROOT / "docs" / "results").rglob("*.json")
                  if "gate_selfcheck" not in p.parts and not p.name.startswith("gate_simulation"))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_real_runs()), st.floats(0.5, 2.0))
def test_a_stored_baseline_gates_as_its_file_row_by_row(tmp_path: Path, path: Path, factor: float) -> None:
    """Gating against a stored run gives the same verdict, row by row, as gating against its file: rounds,
    intervals, units and labels survive the store."""
    from pytest_genai.cli.report import gate_main

    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or not doc.get("benchmarks"):  # a measurement record, not a run
        return
    scaled = json.loads(json.dumps(doc))
    for b in scaled["benchmarks"]:  # a current run: every measured number of the file scaled alike
        genai = (b.get("extra_info") or {}).get("genai") or {}
        for name, value in list((genai.get("metrics") or {}).items()):
            if isinstance(value, (int, float)) and (genai.get("metric_sources") or {}).get(name, "measured") == "measured":
                genai["metrics"][name] = value * factor
                rounds = (genai.get("metric_rounds") or {}).get(name)
                if isinstance(rounds, list):
                    genai["metric_rounds"][name] = [r * factor if isinstance(r, (int, float)) else r for r in rounds]
                iv = (genai.get("metric_intervals") or {}).get(name)
                if isinstance(iv, dict) and all(isinstance(iv.get(k), (int, float)) for k in ("lo", "hi")):
                    iv["lo"], iv["hi"] = iv["lo"] * factor, iv["hi"] * factor
    import tempfile

    work = Path(tempfile.mkdtemp(dir=tmp_path))
    base_file, cur_file = work / "base.json", work / "cur.json"
    base_file.write_text(json.dumps(doc))
    cur_file.write_text(json.dumps(scaled))
    url = f"sqlite:///{work / 's.sqlite'}"
    with open_store(url) as store:
        run_id = add_document(store, doc, str(base_file))

    def rows(*args: str) -> tuple[int, list[tuple]]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = gate_main([*args, str(cur_file), "--format", "json", "--all", "--no-claims", "--allow-missing"])
        if code == 2:
            return code, []
        got = json.loads(out.getvalue())["rows"]
        return code, sorted((r["benchmark"], r.get("device"), r["metric"], r["status"], r["basis"]) for r in got)

    from_file = rows(str(base_file))
    from_store = rows("--baseline", f"run={getattr(run_id, 'run_id', run_id)}", "--store", url)
    assert from_store == from_file


# --- the cases, on real runs ------------------------------------------------------------------------------

H200_QUANT = ROOT / "docs" / "results" / "2026-12-04-cuda-h200" / "run1" / "cuda_quant.json"


def _slowed(doc: dict[str, Any], factor: float, stall: float | None = None) -> dict[str, Any]:
    """``doc`` with every measured speed (times up, rates down) changed by ``factor``, rounds alike; with ``stall``,
    every benchmark recorded that CPU-stall share."""
    from pytest_genai.claims import default_metric_info

    info, _ = default_metric_info()
    out = json.loads(json.dumps(doc))
    for b in out["benchmarks"]:
        genai = (b.get("extra_info") or {}).get("genai") or {}
        if stall is not None:
            genai.setdefault("attachments", {})["cpu_contention"] = {"stall_share_measured": stall, "window_s": 1.0,
                                                                     "method": "PSI"}
        for name, value in list((genai.get("metrics") or {}).items()):
            d = info.get(name)
            if d is None or not d.timing or (genai.get("metric_sources") or {}).get(name, "measured") != "measured":
                continue
            scale = factor if d.direction == "lower" else 1 / factor
            genai["metrics"][name] = value * scale
            if isinstance((genai.get("metric_rounds") or {}).get(name), list):
                genai["metric_rounds"][name] = [r * scale for r in genai["metric_rounds"][name]]
            iv = (genai.get("metric_intervals") or {}).get(name)
            if isinstance(iv, dict) and all(isinstance(iv.get(k), (int, float)) for k in ("lo", "hi")):
                iv["lo"], iv["hi"] = sorted((iv["lo"] * scale, iv["hi"] * scale))
        stats = b.get("stats")
        if isinstance(stats, dict) and isinstance(stats.get("data"), list):
            stats["data"] = [x * factor for x in stats["data"]]
            for k in ("min", "max", "mean", "median", "stddev", "iqr"):
                if isinstance(stats.get(k), (int, float)):
                    stats[k] *= factor
    return out


def test_a_tenfold_slower_h200_quant_run_with_two_or_three_rounds_fails(tmp_path: Path) -> None:
    """The committed H200 A1 run keeps 2-3 rounds a metric: a 10x slower copy passed ('0 regressed')."""
    doc = json.loads(H200_QUANT.read_text())
    base = _file(tmp_path, "base.json", doc)
    code, out, _ = _gate(base, _file(tmp_path, "slow.json", _slowed(doc, 10.0)))
    assert code == 1 and out.startswith("**FAIL** (exit 1)"), out[:400]
    assert _gate(base, base)[0] == 0


def test_a_slowdown_under_load_is_never_printed_as_pass(tmp_path: Path) -> None:
    """Both runs with a 99% CPU-stall share, every round twice as slow: it printed **PASS** and exited 0."""
    doc = json.loads(H200_QUANT.read_text())
    base = _file(tmp_path, "base.json", _slowed(doc, 1.0, stall=0.99))
    code, out, _ = _gate(base, _file(tmp_path, "slow.json", _slowed(doc, 2.0, stall=0.99)))
    assert code == 3 and out.startswith("**UNDECIDED** (exit 3)") and "CPU contention" in out.splitlines()[0]
    assert "PASS" not in out
