"""Builders for minimal pytest-benchmark JSON run files with the pytest-genai contract (hand-written inputs)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence


def bench(
    name: str,
    experiment: str = "quant",
    config: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    *,
    device: tuple[str, str] | None = ("cpu", "cpu"),
    model: str | None = "tiny",
    sources: Mapping[str, str] | None = None,
    units: Mapping[str, str] | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    median: float | None = None,
    schema: Any = "pytest-genai/1",
) -> dict[str, Any]:
    metrics = dict(metrics or {})
    genai: dict[str, Any] = {
        "schema": schema,
        "experiment": experiment,
        "device": None if device is None else {"kind": device[0], "generation": device[1], "name": device[1].upper()},
        "model": model,
        "config": dict(config or {}),
        "metrics": metrics,
        "metric_sources": dict(sources or {k: "measured" for k in metrics}),
        "metric_units": dict(units or {}),
        "claims": list(claims),
        "labels": dict(labels or {}),
        "attachments": {},
    }
    if schema is None:
        del genai["schema"]
    entry: dict[str, Any] = {"group": None, "name": name, "fullname": f"benchmarks/test_x.py::{name}",
                             "params": None, "param": None, "extra_info": {"genai": genai}, "options": {}}
    if median is not None:
        entry["stats"] = {"median": median, "mean": median, "rounds": 3}
    return entry


def run_doc(benchmarks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"machine_info": {"genai": {"devices": [{"kind": "cpu", "generation": "cpu"}]}}, "commit_info": {},
            "benchmarks": list(benchmarks), "datetime": "2026-01-01T00:00:00", "version": "5.2.3"}


def write_run(path: Path, benchmarks: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text(json.dumps(run_doc(benchmarks), indent=1))
    return path
