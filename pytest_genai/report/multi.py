"""N runs side by side (``pytest-genai compare A B C ...``): a row per (benchmark, metric), a value column per run and
each later run's ratio to the first. Benchmarks pair with the first run's as two runs pair (never on the device); one
that the first run lacks is counted, not shown.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .matching import match_records
from pytest_genai.results.runs import Record, Run
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
        ok = first is not None and first == first and first not in (0.0, float("inf"), float("-inf"))
        return tuple(None if not ok or v is None or v != v or v in (float("inf"), float("-inf")) else v / first
                     for v in self.values)


@dataclass(frozen=True)
class MultiComparison:
    labels: tuple[str, ...]
    sources: tuple[str, ...]
    rows: tuple[MultiRow, ...]
    unmatched: tuple[int, ...]
    """Per run: benchmarks with no counterpart in the first run (for the first: those in no other run)."""


def run_label(run: Run) -> str:
    """A run's column heading: its device generations (``a100``; ``cpu`` ...)."""
    gens = run.generations
    return "+".join(gens) if gens else "no device"


def _labels(runs: Sequence[Run], given: Sequence[str] | None) -> tuple[str, ...]:
    labels = list(given) if given else [run_label(r) for r in runs]
    if len(set(labels)) < len(labels):  # two runs on one generation: number them
        labels = [f"{label} #{i + 1}" for i, label in enumerate(labels)]
    return tuple(labels)


def compare_many(runs: Sequence[Run], metrics: Sequence[str] = (), labels: Sequence[str] | None = None
                 ) -> MultiComparison:
    """The side-by-side comparison of ``runs`` (the first is the reference); ``metrics`` keeps only those names."""
    first = runs[0]
    partner: list[dict[int, Record]] = [{id(r): r for r in first.records}]
    unmatched = []
    matched_first: set[int] = set()
    for run in runs[1:]:
        matching = match_records(first.records, run.records)
        partner.append({id(p.baseline): p.current for p in matching.pairs})
        matched_first |= {id(p.baseline) for p in matching.pairs}
        unmatched.append(len(matching.only_current))
    wanted = set(metrics)
    rows = []
    for rec in first.records:
        recs = [p.get(id(rec)) for p in partner]
        names = list(dict.fromkeys(m for r in recs if r is not None for m in r.metrics))
        for name in names:
            if wanted and name not in wanted:
                continue
            have = [r for r in recs if r is not None and name in r.metrics]
            unit = next((r.units[name] for r in have if r.units.get(name)), "")
            source = "/".join(sorted({r.sources.get(name, "measured") for r in have}))
            values = tuple(None if r is None else r.metrics.get(name) for r in recs)
            rows.append(MultiRow(rec.label, rec.experiment, name, unit, source, values))
    lonely = sum(1 for r in first.records if id(r) not in matched_first) if len(runs) > 1 else 0
    return MultiComparison(_labels(runs, labels), tuple(r.source for r in runs), tuple(rows),
                           (lonely, *unmatched))


def _ratio_header(mc: MultiComparison, i: int) -> str:
    return f"{mc.labels[i]} / {mc.labels[0]}"


def headers(mc: MultiComparison) -> list[str]:
    out = ["benchmark", "metric", "unit", mc.labels[0]]
    for i in range(1, len(mc.labels)):
        out += [mc.labels[i], _ratio_header(mc, i)]
    return out


def markdown_table(mc: MultiComparison) -> Table:
    rows = []
    for row in mc.rows:
        metric = row.metric + modeled_mark(row.metric, row.source)
        cells: list[str] = [row.benchmark, metric, row.unit if row.unit != "1" else "", format_number(row.values[0])]
        for value, ratio in zip(row.values[1:], row.ratios[1:]):
            cells += [format_number(value), "—" if ratio is None else f"{ratio:.4g}x"]
        rows.append(tuple(cells))
    numeric = (False, False, False, True) + (True, True) * (len(mc.labels) - 1)
    return Table(tuple(headers(mc)), tuple(rows), numeric)


def flat_rows(mc: MultiComparison) -> list[list[Any]]:
    """The rows of :func:`headers` with raw numbers (CSV)."""
    out = []
    for row in mc.rows:
        cells: list[Any] = [row.benchmark, row.metric, row.unit, row.values[0]]
        for value, ratio in zip(row.values[1:], row.ratios[1:]):
            cells += [value, ratio]
        out.append(cells)
    return out


def as_json(mc: MultiComparison) -> dict[str, Any]:
    return {
        "runs": [{"label": label, "source": source, "unmatched_benchmarks": n}
                 for label, source, n in zip(mc.labels, mc.sources, mc.unmatched)],
        "rows": [{"benchmark": r.benchmark, "experiment": r.experiment, "metric": r.metric, "unit": r.unit,
                  "source": r.source, "values": list(r.values), "ratios_to_first": list(r.ratios)} for r in mc.rows],
    }
