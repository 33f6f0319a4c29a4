"""Tables built from runs, comparisons and gate results (the content; :mod:`.tables` does the layout)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .compare import FAILING, MISSING_CURRENT, Comparison, MetricComparison
from pytest_genai.identity import DATA_IDENTITY_KEYS, data_label

from .gate import GateResult, GenerationCheck
from .matching import nearest_difference
from .registry import MetricInfo
from .runs import Record
from .tables import Table, format_change, format_number, make_table

MAX_LABEL_CHARS = 24
"""Labels with longer values than this are descriptions, not table cells."""
MAX_VALUE_COLUMNS = 8
"""Metric and label columns per table; wider results are split over several tables."""

_ARROWS = {"higher": "↑ higher", "lower": "↓ lower", "none": "—", None: "? (unregistered)"}


def device_text(base: Record, cur: Record | None = None) -> str:
    def one(r: Record) -> str:
        return r.device.generation if r.device is not None else "—"

    if cur is None or one(base) == one(cur):
        return one(base)
    return f"{one(base)} → {one(cur)}"


def _status(mc: MetricComparison, strict: bool = False) -> str:
    if mc.status in FAILING or (strict and mc.status == MISSING_CURRENT):
        return mc.status.upper()
    return mc.status


def comparison_table(comparison: Comparison, *, strict: bool = False,
                     where: Callable[[MetricComparison], bool] | None = None) -> Table:
    """One row per (matched benchmark, metric): values, ratio, change, direction, limit and status.

    ``where`` keeps only the rows it is true for (the short summary's regressions, improvements, ...).
    """
    headers = ["benchmark", "device", "metric", "baseline", "current", "ratio", "change", "better", "limit", "status"]
    numeric = [False, False, False, True, True, True, True, False, True, False]
    rows = []
    for pc in comparison.pairs:
        for mc in pc.metrics:
            if where is not None and not where(mc):
                continue
            metric = f"{mc.metric} [{mc.unit}]" if mc.unit and mc.unit != "1" else mc.metric
            if "modeled" in mc.source:
                metric += " (modeled)"
            row = [
                pc.pair.current.label,
                device_text(pc.pair.baseline, pc.pair.current),
                metric,
                format_number(mc.baseline),
                format_number(mc.current),
                "—" if mc.ratio is None else f"{mc.ratio:.4g}x",
                format_change(mc.change),
                _ARROWS.get(mc.direction, str(mc.direction)),
                "—" if mc.max_regression is None else f"{mc.max_regression * 100:g}%",
                _status(mc, strict),
            ]
            rows.append(row)
    return make_table(headers, rows, numeric)


def generation_table(checks: Sequence[GenerationCheck]) -> Table:
    rows = [
        [
            c.claim_id,
            c.benchmark,
            f"{c.from_generation} → {c.to_generation}",
            c.metric,
            format_number(c.baseline),
            format_number(c.current),
            "—" if math.isnan(c.speedup) else f"{c.speedup:.3g}x",
            f"[{format_number(c.min)}, {format_number(c.max)}]",
            c.paper,
            c.verdict.upper() if c.verdict == "fail" else c.verdict,
        ]
        for c in checks
    ]
    headers = ["claim", "benchmark", "generations", "metric", "baseline", "current", "speedup", "bound", "paper", "verdict"]
    return make_table(headers, rows, [False, False, False, False, True, True, True, False, False, False])


def one_sided_table(only_baseline: Sequence[Record], only_current: Sequence[Record], *,
                    list_baseline: bool = True) -> Table:
    """Benchmarks without a counterpart, with how their identity differs from the nearest one of the other run.
    ``list_baseline=False``: rows for the current-only ones (the gate lists baseline-only ones as failures)."""
    rows = [[r.label, device_text(r), "baseline only", nearest_difference(r, only_current) or "—"]
            for r in (only_baseline if list_baseline else ())]
    rows += [[r.label, device_text(r), "current only", nearest_difference(r, only_baseline, rec_is_current=True) or "—"]
             for r in only_current]
    return make_table(["benchmark", "device", "present in", "nearest counterpart differs in (baseline -> current)"],
                      rows)


def failures_table(result: GateResult) -> Table:
    return make_table(["benchmark", "metric", "why"], [[f.benchmark, f.metric, f.reason] for f in result.failures])


def claims_table(records: Sequence[Record], claims_by_id: Mapping[str, Any] | None = None) -> Table:
    """The claims checked in a run: claim, benchmark, device, measured, bound, paper value, verdict."""
    claims_by_id = claims_by_id or {}
    rows = []
    for rec in records:
        for v in rec.claims:
            cid = str(v.get("id", "?"))
            claim = claims_by_id.get(cid)
            paper_value = v.get("paper")  # the recorder stores the claim's paper value under "paper"
            if paper_value is None and claim is not None:
                paper_value = getattr(claim, "paper_value", None)
            source = getattr(claim, "source", "") if claim is not None else ""
            rows.append(
                [
                    cid,
                    rec.label,
                    device_text(rec),
                    _num(v.get("measured")),
                    _bound(v.get("min"), v.get("max")),
                    _num(paper_value),
                    str(source),
                    str(v.get("verdict", "?")),
                ]
            )
    headers = ["claim", "benchmark", "device", "measured", "bound", "paper value", "source", "verdict"]
    return make_table(headers, rows, [False, False, False, True, False, True, False, False])


def _num(x: Any) -> str:
    return format_number(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else ("—" if x is None else str(x))


def _bound(lo: Any, hi: Any) -> str:
    if lo is not None and hi is not None:
        return f"[{_num(lo)}, {_num(hi)}]"
    if lo is not None:
        return f"≥ {_num(lo)}"
    if hi is not None:
        return f"≤ {_num(hi)}"
    return "—"


def _cell(value: Any) -> str:
    """A config value as written in the config (no thousands separators, floats in shortest form)."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


_DATA_KEYS = ("data_source",) + DATA_IDENTITY_KEYS


def display_config(rec: Record) -> dict[str, Any]:
    """A record's identity as tables show it: the data's keys (dataset, split, sha256, data_source) folded into one
    ``data`` entry — ``dataset/split @sha256[:12]``, or the last part of a local data file — never a local path."""
    label = data_label(rec.config, rec.environment)
    keys = list(rec.config)
    at = next((i for i, k in enumerate(keys) if k in _DATA_KEYS), None)
    if at is None:
        at = keys.index("task") + 1 if "task" in keys else len(keys)
    name = "data" if "data" not in rec.config else "data_identity"
    out: dict[str, Any] = {}
    for i, key in enumerate(keys + [None]):
        if i == at and label is not None:
            out[name] = label
        if key is not None and key not in _DATA_KEYS:
            out[key] = rec.config[key]
    return out


@dataclass(frozen=True)
class ExperimentTables:
    """The results of one test function of one experiment: rows = configs, metrics split over several tables
    (each repeating the row's identity) so that a CI comment stays readable."""

    experiment: str
    test: str
    shared: str
    tables: tuple[Table, ...]


def _ordered(keys: Iterable[Iterable[str]]) -> list[str]:
    out: dict[str, None] = {}
    for group in keys:
        for k in group:
            out.setdefault(k, None)
    return list(out)


def _metric_header(m: str, recs: Sequence[Record], info: Mapping[str, MetricInfo]) -> str:
    unit = info[m].unit if m in info and info[m].unit else next((r.units[m] for r in recs if m in r.units), "")
    head = f"{m} [{unit}]" if unit and unit != "1" else m
    if any(r.sources.get(m) == "modeled" for r in recs if m in r.metrics):
        head += " (modeled)"
    return head


def experiment_tables(records: Sequence[Record], info: Mapping[str, MetricInfo]) -> list[ExperimentTables]:
    """Group records by (experiment, test function) and lay each group out as tables.

    Identity columns: device and model when they vary, then the config ``id`` when every row has one
    (it names the config), else the config parameters that vary.  Values shared by every row go in
    :attr:`ExperimentTables.shared`.  Metrics (with units; "(modeled)" when modeled) and short labels follow,
    at most :data:`MAX_VALUE_COLUMNS` per table.
    """
    groups: dict[tuple[str, str], list[Record]] = {}
    for rec in records:
        groups.setdefault((rec.experiment or "pytest-benchmark", rec.name.split("[", 1)[0]), []).append(rec)
    out = []
    for (exp, test), recs in groups.items():
        shown = {id(r): display_config(r) for r in recs}
        params = _ordered(shown[id(r)] for r in recs)
        varying = [p for p in params if len({_cell(shown[id(r)].get(p, "—")) for r in recs}) > 1]
        shared = [f"{p}={_cell(shown[id(recs[0])].get(p))}" for p in params if p not in varying and p != "id"]
        if all("id" in r.config for r in recs) and len(recs) > 1:
            varying = ["id"]
        identity: list[tuple[str, Callable[[Record], str]]] = []
        constant: list[str] = []
        for head, get in (("device", device_text), ("model", lambda r: r.model or "—")):
            if len({get(r) for r in recs}) > 1:
                identity.append((head, get))
            else:
                constant.append(f"{head}={get(recs[0])}")
        shared = constant + shared
        identity += [(p, lambda r, p=p: _cell(shown[id(r)].get(p, "—"))) for p in varying]
        if not identity:
            identity = [("benchmark", lambda r: r.name)]
        metrics = _ordered(r.metrics for r in recs)
        # short labels (bound: memory) are columns; long descriptive ones stay in the JSON
        labels = [k for k in _ordered(r.labels for r in recs)
                  if all(len(r.labels.get(k, "")) <= MAX_LABEL_CHARS for r in recs)]
        values: list[tuple[str, bool, Callable[[Record], str]]] = [
            (_metric_header(m, recs, info), True, lambda r, m=m: format_number(r.metrics.get(m))) for m in metrics
        ] + [(k, False, lambda r, k=k: r.labels.get(k, "—")) for k in labels]
        tables = []
        for start in range(0, max(1, len(values)), MAX_VALUE_COLUMNS):
            chunk = values[start:start + MAX_VALUE_COLUMNS]
            headers = [h for h, _ in identity] + [h for h, _, _ in chunk]
            numeric = [False] * len(identity) + [n for _, n, _ in chunk]
            rows = [[get(r) for _, get in identity] + [get(r) for _, _, get in chunk] for r in recs]
            tables.append(make_table(headers, rows, numeric))
        out.append(ExperimentTables(exp, test, ", ".join(shared), tuple(tables)))
    return out
