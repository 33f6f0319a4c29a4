"""N runs side by side (``pytest-genai compare A B C ...``): each run's value and its ratio to the first run's."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .matching import match_records
from pytest_genai.results.runs import Run
from pytest_genai.tables import Table, format_number, modeled_mark


@dataclass(frozen=True)
class MultiRow:
    benchmark: str
    experiment: str | None
    metric: str
    unit: str
    source: str
    values: tuple[float | None, ...]

    @property
    def ratios(self) -> tuple[float | None, ...]:
        """``value / first value`` per run (None where either is missing, zero or not finite); the first is 1."""
        first = self.values[0]
        ok = first is not None and math.isfinite(first) and first != 0
        return tuple(v / first if ok and v is not None and math.isfinite(v) else None for v in self.values)


@dataclass(frozen=True)
class MultiComparison:
    labels: tuple[str, ...]
    sources: tuple[str, ...]
    rows: tuple[MultiRow, ...]
    unmatched: tuple[int, ...]  # per run: benchmarks with no counterpart in the first (for the first: in no other)


def compare_many(runs: Sequence[Run], metrics: Sequence[str] = ()) -> MultiComparison:
    """The side-by-side comparison of ``runs`` (the first is the reference); ``metrics`` keeps only those names."""
    first = runs[0]
    matchings = [match_records(first.records, run.records) for run in runs[1:]]
    partner = [{id(r): r for r in first.records}] + [{id(p.baseline): p.current for p in m.pairs} for m in matchings]
    rows = []
    for rec in first.records:
        recs = [p.get(id(rec)) for p in partner]
        for name in dict.fromkeys(m for r in recs if r is not None for m in r.metrics if not metrics or m in metrics):
            ms = [r and r.measurement(name) for r in recs]  # None where the run has no such benchmark or metric
            unit = next((m.unit for m in ms if m and m.unit), "")
            source = "/".join(sorted({"measured" if m.source is None else m.source for m in ms if m}))
            rows.append(MultiRow(rec.label, rec.experiment, name, unit, source, tuple(m and m.value for m in ms)))
    lonely = sum(all(id(r) not in p for p in partner[1:]) for r in first.records) if len(runs) > 1 else 0
    names = ["+".join(g) if (g := r.generations) else "no device" for r in runs]
    if len(set(names)) < len(names):  # two runs on one generation: number them
        names = [f"{label} #{i + 1}" for i, label in enumerate(names)]
    unmatched = (lonely, *(len(m.only_current) for m in matchings))
    return MultiComparison(tuple(names), tuple(r.source for r in runs), tuple(rows), unmatched)


def headers(mc: MultiComparison) -> list[str]:
    later = (h for label in mc.labels[1:] for h in (label, f"{label} / {mc.labels[0]}"))  # each value, its ratio
    return ["benchmark", "metric", "unit", mc.labels[0], *later]


def _cells(row: MultiRow, value: Callable[[float | None], Any], ratio: Callable[[float | None], Any]) -> list[Any]:
    """A row's values, each later one followed by its ratio to the first, as ``value`` and ``ratio`` write them."""
    return [value(row.values[0])] + [c for v, r in zip(row.values[1:], row.ratios[1:]) for c in (value(v), ratio(r))]


def markdown_table(mc: MultiComparison) -> Table:
    rows = tuple((row.benchmark, row.metric + modeled_mark(row.metric, row.source), row.unit if row.unit != "1" else "",
                  *_cells(row, format_number, lambda r: "—" if r is None else f"{r:.4g}x")) for row in mc.rows)
    return Table(tuple(headers(mc)), rows, (False, False, False, True) + (True, True) * (len(mc.labels) - 1))


def flat_rows(mc: MultiComparison) -> list[list[Any]]:
    """The rows of :func:`headers` with raw numbers (CSV)."""
    return [[row.benchmark, row.metric, row.unit, *_cells(row, lambda v: v, lambda r: r)] for row in mc.rows]


def as_json(mc: MultiComparison) -> dict[str, Any]:
    return {"runs": [{"label": label, "source": source, "unmatched_benchmarks": n}
                     for label, source, n in zip(mc.labels, mc.sources, mc.unmatched)],
            "rows": [{"benchmark": r.benchmark, "experiment": r.experiment, "metric": r.metric, "unit": r.unit,
                      "source": r.source, "values": list(r.values), "ratios_to_first": list(r.ratios)}
                     for r in mc.rows]}
