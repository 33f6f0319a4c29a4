"""A pytest-benchmark JSON document as the store's rows (pure: no database).

Read by the same reader as ``pytest-genai report`` so a stored benchmark pairs exactly as the file does; rounds,
intervals, commit and settings are taken from the document beside it.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pytest_genai import SCHEMA
from pytest_genai.results.runs import Record, recorded_spread, run_from_json


def canonical(obj: Any) -> str:
    """Compact JSON with sorted keys: the text hashed and stored."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str, allow_nan=True)


def content_hash(doc: Mapping[str, Any]) -> str:
    """sha256 of the document's canonical JSON: the same run, however its file was indented, is one run."""
    return hashlib.sha256(canonical(doc).encode()).hexdigest()


@dataclass(frozen=True)
class MetricRow:
    name: str
    value: float
    unit: str | None
    source: str | None
    rounds: tuple[float, ...] | None
    interval: Mapping[str, Any] | None


@dataclass(frozen=True)
class ClaimRow:
    claim: Mapping[str, Any]
    fullname: str | None  # the node id that checked it, when known
    position: int | None = None  # that benchmark's index: one node id may name several benchmarks


@dataclass(frozen=True)
class BenchmarkRow:
    record: Record
    metrics: tuple[MetricRow, ...]


@dataclass(frozen=True)
class RunRows:
    content_hash: str
    run: Mapping[str, Any]  # the ``runs`` row without id and added_time
    devices: tuple[Mapping[str, Any], ...]
    benchmarks: tuple[BenchmarkRow, ...]
    claims: tuple[ClaimRow, ...]
    warnings: tuple[str, ...]

    @property
    def row_count(self) -> int:
        return 1 + len(self.devices) + len(self.benchmarks) + sum(len(b.metrics) for b in self.benchmarks) \
            + len(self.claims)


def _float(value: Any) -> float | None:
    """A JSON number as a float (nan/inf kept); None for anything else, a bool, or an int too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _float_list(value: Any) -> tuple[float, ...] | None:
    """Every value of a non-empty list as a float, else None (as the file reader ignores odd rounds)."""
    if not isinstance(value, list) or not value:
        return None
    out = [_float(v) for v in value]
    return None if any(v is None for v in out) else tuple(out)  # type: ignore[arg-type]


def _metric_rows(record: Record, bench: Mapping[str, Any]) -> tuple[MetricRow, ...]:
    out = []
    for name, value in record.metrics.items():
        rounds, interval = recorded_spread(bench, name)
        out.append(MetricRow(name, float(value), record.units.get(name), record.sources.get(name),
                             _float_list(rounds), interval if isinstance(interval, dict) else None))
    return tuple(out)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_rows(doc: Any, source: str, command: str | None = None) -> RunRows:
    """The rows of one document (:class:`pytest_genai.results.errors.ReportInputError` naming ``source`` when it is
    not a usable run)."""
    run = run_from_json(doc, source)
    genai = doc.get("genai") if isinstance(doc.get("genai"), dict) else {}
    commit = doc.get("commit_info") if isinstance(doc.get("commit_info"), dict) else {}
    machine = doc.get("machine_info") if isinstance(doc.get("machine_info"), dict) else {}
    settings = genai.get("settings") if isinstance(genai.get("settings"), dict) else {}
    row = {
        "run_time": run.datetime,
        "commit_id": _text(commit.get("id")),
        "commit_time": _text(commit.get("time")),
        "commit_dirty": commit.get("dirty") if isinstance(commit.get("dirty"), bool) else None,
        "branch": _text(commit.get("branch")),
        "command": command,
        "json_schema": _text(genai.get("schema")) or (SCHEMA if any(r.experiment for r in run.records) else None),
        "pytest_benchmark_version": _text(doc.get("version")),
        "claims_mode": _text(genai.get("claims_mode")),
        "scale": _text(settings.get("scale")),
        "node": _text(machine.get("node")),
        "source": source,
        "stack_json": canonical(run.stack) if run.stack else None,
        "settings_json": canonical(settings) if settings else None,
        "absent_json": canonical(dict(run.absent)) if run.absent else None,
    }
    devices = []
    for d in run.devices:
        spec = d.get("spec") if isinstance(d.get("spec"), dict) else None
        devices.append({"kind": str(d.get("kind") or "unknown"), "generation": str(d.get("generation") or "unknown"),
                        "name": str(d.get("name") or ""), "spec_source": _text(spec.get("source")) if spec else None,
                        "spec_json": canonical(spec) if spec else None})
    benches = tuple(BenchmarkRow(rec, _metric_rows(rec, raw)) for rec, raw in zip(run.records, doc["benchmarks"]))
    # each benchmark's own verdicts, then the session's verdicts of tests that are no benchmark here
    claims = [ClaimRow(c, b.record.fullname, i) for i, b in enumerate(benches) for c in b.record.claims]
    names = {b.record.fullname for b in benches}
    run_claims = genai.get("claims") if isinstance(genai.get("claims"), list) else []
    claims += [ClaimRow(c, None) for c in run_claims if isinstance(c, dict) and c.get("nodeid") not in names]
    return RunRows(content_hash(doc), row, tuple(devices), benches, tuple(claims), run.warnings)


def number_columns(value: float) -> tuple[float | None, str | None]:
    """``(value, nonfinite)``: a finite float as itself; nan/inf as NULL plus its name (SQLite has no NaN)."""
    if math.isfinite(value):
        return value, None
    return None, "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def number_from(value: float | None, nonfinite: str | None) -> float | None:
    return float(nonfinite) if nonfinite else value


def claim_numbers(claim: Mapping[str, Any], keys: Sequence[str]) -> list[float | None]:
    out: list[float | None] = []
    for key in keys:
        v = _float(claim.get(key))
        out.append(v if v is not None and math.isfinite(v) else None)
    return out


def claim_text(claim: Mapping[str, Any], key: str) -> str | None:
    """A claim's text field as text (a JSON list or object where text belongs is stored as its JSON)."""
    v = claim.get(key)
    if v is None or isinstance(v, str):
        return v
    return canonical(v)
