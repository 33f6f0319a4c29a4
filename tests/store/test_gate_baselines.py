"""Gate baselines taken from the store: ``latest`` orders run times as times, claims stay with the benchmark (and
device) that checked them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_genai.store.engine import open_store
from pytest_genai.store.read import query_run, run_summaries, time_key
from pytest_genai.store.write import add_document

ROOT = Path(__file__).resolve().parents[2]


def _runfiles() -> Any:
    """tests/report/runfiles.py (the hand-written run builders), loaded by path: test packages are not importable."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("genai_runfiles", ROOT / "tests" / "report" / "runfiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench, run_doc = _runfiles().bench, _runfiles().run_doc


def doc_at(when: str, tps: float, generation: str = "h100") -> dict[str, Any]:
    doc = run_doc([bench("test_decode", "quant", {"id": "decode"}, {"tokens_per_s": tps},
                         device=("cuda", generation))])
    doc["datetime"] = when
    return doc


def test_run_times_order_as_times_not_text() -> None:
    assert time_key("2026-03-01T23:00:00-05:00") > time_key("2026-03-02T01:00:00Z")  # 04:00Z vs 01:00Z
    assert time_key("2026-03-02T01:00:00") == time_key("2026-03-02T01:00:00+00:00")  # no offset: UTC
    assert time_key(None) == time_key("not a time") < time_key("1970-01-02T00:00:00Z")  # unknown: oldest


def test_latest_is_the_newest_run_in_time_whatever_its_offset(store_url: str) -> None:
    with open_store(store_url) as store:
        add_document(store, doc_at("2026-03-01T23:00:00-05:00", 300.0), "east.json")  # 04:00 UTC: the newest
        add_document(store, doc_at("2026-03-02T01:00:00Z", 100.0), "utc.json")
        latest = query_run(store, "generation=h100 latest")
        listed = [r["time"] for r in run_summaries(store)]
    assert latest.records[0].metrics["tokens_per_s"] == 300.0
    assert listed == ["2026-03-01T23:00:00-05:00", "2026-03-02T01:00:00Z"]


def timed_doc(when: str, tps: float, rounds: list[float] | None = None) -> dict[str, Any]:
    doc = doc_at(when, tps)
    if rounds is not None:
        doc["benchmarks"][0]["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": rounds}
    return doc


def _store_runs(store_url: str, medians: list[float], spread: float = 0.005) -> None:
    """One stored run per median, a day apart (oldest first), each with 6 tight rounds around its median."""
    with open_store(store_url) as store:
        for day, m in enumerate(medians, start=1):
            rounds = [m * (1 + spread * f) for f in (-1, -0.5, 0, 0, 0.5, 1)]
            add_document(store, timed_doc(f"2026-03-{day:02d}T00:00:00Z", m, rounds), f"r{day}.json")


def _current(tmp_path: Path, tps: float, spread: float = 0.005) -> Path:
    path = tmp_path / "current.json"
    rounds = [tps * (1 + spread * f) for f in (-1, -0.5, 0, 0, 0.5, 1)]
    path.write_text(json.dumps(timed_doc("2026-04-01T00:00:00Z", tps, rounds)))
    return path


def _gate_json(*args: str) -> tuple[int, dict[str, Any], str]:
    import contextlib
    import io

    from pytest_genai.cli.report import gate_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = gate_main([*args, "--format", "json", "--all", "--no-claims"])
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else {}, err.getvalue()


def test_a_baseline_of_the_last_runs_is_judged_against_their_spread(store_url: str, tmp_path: Path) -> None:
    """Five runs whose medians wander +-8 % (run to run) though each run's rounds are within 0.5 %: against the
    newest run alone an 8 % drop reads regressed on rounds alone and undecided with the measured run noise; against
    the five runs' spread it is inconclusive. A 40 % drop is
    regressed either way, and the gate names the runs that formed the baseline."""
    _store_runs(store_url, [1000.0, 1080.0, 930.0, 1050.0, 1000.0])
    current = _current(tmp_path, 920.0)
    code, one, _ = _gate_json("--baseline", "generation=h100 latest", str(current), "--store", store_url,
                              "--run-noise", "0")
    assert code == 1 and one["rows"][0]["verdict"] == "regressed"  # rounds alone: the launches' spread unseen
    code, one, _ = _gate_json("--baseline", "generation=h100 latest", str(current), "--store", store_url)
    assert code == 3 and one["rows"][0]["verdict"] == "inconclusive"  # the measured run noise: undecided
    code, five, _ = _gate_json("--baseline", "generation=h100 last:5", str(current), "--store", store_url)
    row = five["rows"][0]
    # the 8% drop is past the 5% threshold, so the undecided row holds the gate at exit 3, never a pass
    assert code == 3 and row["verdict"] == "inconclusive" and row["basis"] == "interval"
    assert "baseline of 5 runs" in row["note"] and row["interval_hi"] - row["interval_lo"] > 0.15
    assert five["baseline"] == "store runs 5, 4, 3, 2, 1 (generation=h100 last:5: 5 run(s), newest first)"
    code, slow, _ = _gate_json("--baseline", "generation=h100 last:5", str(_current(tmp_path, 600.0)),
                               "--store", store_url)
    assert code == 1 and slow["rows"][0]["verdict"] == "regressed"


def test_last_0_and_a_store_with_fewer_runs_are_clear_messages(store_url: str, tmp_path: Path) -> None:
    _store_runs(store_url, [1000.0, 1010.0])
    current = _current(tmp_path, 1000.0)
    code, _, err = _gate_json("--baseline", "generation=h100 last:0", str(current), "--store", store_url)
    assert code == 2 and "'last:0' asks for no run; give last:N with N >= 1" in err and "Traceback" not in err
    code, doc, err = _gate_json("--baseline", "generation=h100 last:5", str(current), "--store", store_url)
    assert code == 0 and "holds 2 matching run(s), not 5; the baseline is run(s) 2, 1" in err
    assert doc["baseline"].startswith("store runs 2, 1 (")



def test_one_test_name_on_two_devices_keeps_each_claim_with_its_own_benchmark(store_url: str) -> None:
    """Two benchmarks with one node id (a test run on the CPU and on an A100 in one session): each one's claim is
    stored under it; the first took both before."""
    def claim(verdict: str) -> dict[str, Any]:
        return {"id": "A1.tokens", "metric": "tokens_per_s", "measured": 1.0, "min": 1.0, "max": None,
                "paper": None, "verdict": verdict, "message": verdict, "basis": "target", "interval": None}

    benches = [bench("test_decode", "quant", {"id": "d"}, {"tokens_per_s": 10.0}, device=("cpu", "cpu"),
                     claims=[claim("fail")]),
               bench("test_decode", "quant", {"id": "d"}, {"tokens_per_s": 1000.0}, device=("cuda", "a100"),
                     claims=[claim("pass")])]
    with open_store(store_url) as store:
        add_document(store, run_doc(benches), "two.json")
        run = query_run(store, "latest")
    got = {r.device.generation: [c["verdict"] for c in r.claims] for r in run.records}
    assert got == {"cpu": ["fail"], "a100": ["pass"]}
