"""A pytest-benchmark JSON document as the store's rows (pure: no database). Read by ``pytest-genai report``'s reader,
so a stored benchmark pairs exactly as the file does; rounds, intervals, commit and settings come from the document."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from pytest_genai import SCHEMA
from pytest_genai.results.runs import Record, json_float, recorded_spread, run_from_json


def canonical(obj: Any) -> str:
    """Compact JSON with sorted keys: the text hashed and stored."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str, allow_nan=True)


def content_hash(doc: Mapping[str, Any]) -> str:
    """sha256 of the document's canonical JSON: the same run, however its file was indented, is one run."""
    return hashlib.sha256(canonical(doc).encode()).hexdigest()


@dataclass(frozen=True)
class RunRows:
    content_hash: str
    run: Mapping[str, Any]  # the ``runs`` row without id and added_time
    devices: tuple[Mapping[str, Any], ...]
    benchmarks: tuple[Record, ...]
    metrics: tuple[tuple[int, dict[str, Any]], ...]  # (benchmark index, ``metrics`` row without benchmark_id)
    claims: tuple[tuple[int | None, Mapping[str, Any]], ...]  # (benchmark index, None: a test that is no benchmark)

    @property
    def row_count(self) -> int:
        return 1 + len(self.devices) + len(self.benchmarks) + len(self.metrics) + len(self.claims)


def _metric_rows(record: Record, bench: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for name, value in record.metrics.items():
        rounds, interval = recorded_spread(bench, name)
        # every round as a float, else none (as the file reader ignores odd rounds)
        floats = [json_float(v) for v in rounds] if isinstance(rounds, list) else []
        # nan/inf: NULL plus its name (SQLite has no NaN)
        nonfinite = None if math.isfinite(value) else "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
        yield {"name": name, "value": None if nonfinite else float(value), "nonfinite": nonfinite,
               "unit": record.units.get(name), "source": record.sources.get(name),
               "rounds_json": json.dumps(floats) if floats and None not in floats else None,
               "interval_json": canonical(interval) if isinstance(interval, dict) and interval else None}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def run_rows(doc: Any, source: str, command: str | None = None) -> RunRows:
    """The rows of one document (a ReportInputError naming ``source`` when it is not a usable run)."""
    run = run_from_json(doc, source)
    genai, machine, commit = _dict(doc.get("genai")), _dict(doc.get("machine_info")), run.commit
    settings = _dict(genai.get("settings"))
    row = {
        "run_time": run.datetime,
        "commit_dirty": commit.get("dirty") if isinstance(commit.get("dirty"), bool) else None,
        "command": command,
        "json_schema": _text(genai.get("schema")) or (SCHEMA if any(r.experiment for r in run.records) else None),
        "source": source,
        **{column: _text(where.get(key)) for column, where, key in (
            ("commit_id", commit, "id"), ("commit_time", commit, "time"), ("branch", commit, "branch"),
            ("pytest_benchmark_version", doc, "version"), ("claims_mode", genai, "claims_mode"),
            ("scale", settings, "scale"), ("node", machine, "node"))},
        **{f"{key}_json": canonical(value) if value else None
           for key, value in (("stack", run.stack), ("settings", settings), ("absent", dict(run.absent)))},
    }
    devices = tuple({"kind": str(d.get("kind") or "unknown"), "generation": str(d.get("generation") or "unknown"),
                     "name": str(d.get("name") or ""), "spec_source": _text(spec.get("source")) if spec else None,
                     "spec_json": canonical(spec) if spec else None}
                    for d in run.devices for spec in [d.get("spec") if isinstance(d.get("spec"), dict) else None])
    metrics = tuple((i, m) for i, (rec, raw) in enumerate(zip(run.records, doc["benchmarks"]))
                    for m in _metric_rows(rec, raw))
    # each benchmark's own verdicts, then the session's verdicts of tests that are no benchmark here
    claims: list[tuple[int | None, Mapping[str, Any]]] = [(i, c) for i, r in enumerate(run.records) for c in r.claims]
    names = {r.fullname for r in run.records}
    run_claims = genai.get("claims") if isinstance(genai.get("claims"), list) else []
    claims += [(None, c) for c in run_claims if isinstance(c, dict) and c.get("nodeid") not in names]
    return RunRows(content_hash(doc), row, devices, tuple(run.records), metrics, tuple(claims))


def claim_numbers(claim: Mapping[str, Any], keys: Sequence[str]) -> list[float | None]:
    """The claim's numbers under ``keys``; None for a missing or non-finite one."""
    return [v if v is not None and math.isfinite(v) else None for v in (json_float(claim.get(k)) for k in keys)]
