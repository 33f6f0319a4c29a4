"""A value the store's columns cannot hold (longer than its column, or a NUL character) is one line naming it, exit 2,
and nothing written, on SQLite as on PostgreSQL (PostgreSQL raised a DataError traceback; docs/reliability.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_genai.store.engine import open_store

from .test_store import generation_doc


def _metric_name(doc: dict[str, Any], name: str) -> None:
    genai = doc["benchmarks"][0]["extra_info"]["genai"]
    genai["metrics"][name] = 1.0
    genai["metric_sources"][name] = "measured"


def _unit(doc: dict[str, Any], unit: str) -> None:
    doc["benchmarks"][0]["extra_info"]["genai"]["metric_units"]["tokens_per_s"] = unit


def _genai(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["benchmarks"][0]["extra_info"]["genai"][key] = value
    return change


def _generation(value: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["benchmarks"][0]["extra_info"]["genai"]["device"]["generation"] = value
    return change


def _commit(doc: dict[str, Any]) -> None:
    doc["commit_info"]["id"] = "c" * 65


def _name_with_nul(doc: dict[str, Any]) -> None:
    doc["benchmarks"][0]["name"] = "test_decode[a\x00b]"


CASES = {
    "metrics.name": lambda d: _metric_name(d, "m" * 129),
    "metrics.unit": lambda d: _unit(d, "u" * 33),
    "runs.commit_id": _commit,
    "benchmarks.experiment": _genai("experiment", "e" * 65),
    "devices.generation": _generation("g" * 65),
    "benchmarks.name": _name_with_nul,
    "devices.generation ": _generation("h100\x00"),
}


@pytest.mark.parametrize("column", list(CASES))
def test_a_value_the_store_cannot_hold_is_one_line_and_nothing_is_written(column: str, store_url: str,
                                                                         tmp_path: Path, capsys) -> None:
    from sqlalchemy import func, select

    from pytest_genai.cli import main

    doc = generation_doc("a100", "2026-02-01T00:00:00", 250.0)
    CASES[column](doc)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    code = main(["store", "add", str(run), "--store", store_url])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "run.json" in err and column.strip() in err, err
    with open_store(store_url) as store:
        for table in ("runs", "benchmarks", "metrics", "devices"):
            t = store.table(table)
            assert store.transaction(lambda c: c.execute(select(func.count()).select_from(t)).scalar()) == 0, table
