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
