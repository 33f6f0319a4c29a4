"""Reference rows as runs in the suite's own JSON (pytest-benchmark's, with ``extra_info.genai``).

One run per device generation, one benchmark per published row. A row's identity is its config, so it pairs across
generations whatever batch each used; the settings are its environment, never matched on.
"""
from __future__ import annotations

from typing import Any, Iterable

from pytest_genai import SCHEMA
from pytest_genai.reference.row import REFERENCE_SOURCE, ReferenceRow
from pytest_genai.results.measurement import Measurement
from pytest_genai.results.runs import Run, benchmark_json, metrics_json, run_from_json


def benchmark_name(row: ReferenceRow) -> str:
    return f"reference[{row.provenance.source}:{row.row_id}]"


def benchmark(row: ReferenceRow) -> dict[str, Any]:
    """One pytest-benchmark entry for ``row`` (no timing stats: nothing was timed here)."""
    measured = metrics_json({m: Measurement(v, REFERENCE_SOURCE, row.units.get(m)) for m, v in row.metrics.items()})
    genai = {
        "schema": SCHEMA,
        "experiment": row.experiment,
        "device": {"kind": row.device_kind, "generation": row.generation,
                   "name": f"{row.generation} ({row.provenance.source} published)"},
        "model": row.model,
        "config": dict(row.identity),
        "environment": dict(row.settings),
        **{key: measured[key] for key in ("metrics", "metric_sources", "metric_units")},  # published: no rounds
        "labels": {"source": REFERENCE_SOURCE, "task": row.task,
                   "unstated": ", ".join(row.unstated) or "none", "provenance": row.provenance.text()},
        "attachments": {"provenance": dict(vars(row.provenance)), "note": row.note},
        "claims": [],
    }
    return benchmark_json(benchmark_name(row), genai, param=row.row_id, group=None)


def run_json(rows: Iterable[ReferenceRow]) -> dict[str, Any]:
    """A whole pytest-benchmark document of ``rows``."""
    rows = list(rows)
    return {"machine_info": {"genai": {"devices": [], "reference": sorted({r.provenance.source for r in rows})}},
            "commit_info": {}, "benchmarks": [benchmark(r) for r in rows], "datetime": None, "version": "reference"}


def runs_by_generation(rows: Iterable[ReferenceRow]) -> dict[str, Run]:
    """generation -> the run of its rows, read back by the suite's own reader (so it is what a user's file gives)."""
    by_gen: dict[str, list[ReferenceRow]] = {}
    for row in rows:
        by_gen.setdefault(row.generation, []).append(row)
    return {gen: run_from_json(run_json(these), f"reference:{gen}") for gen, these in by_gen.items()}
