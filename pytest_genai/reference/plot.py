"""A user's runs beside the vendors' published numbers on one plot (``pytest-genai reference plot``).

One column per benchmark with a published counterpart: each run's value with its interval, the published number and
the publisher's acceptance floor. :func:`pairs` is pure; :func:`plot_pairs` draws them.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable, Sequence

from pytest_genai.reference.claims import Counterpart, check_record


@dataclasses.dataclass(frozen=True)
class Pair:
    """One run's value of a benchmark and the published row it is compared with."""

    run: str  # the run's source (its file)
    benchmark: str  # the benchmark and device generation, as the x-axis names it
    metric: str
    unit: str
    measured: float
    lo: float | None
    hi: float | None
    published: float
    floor: float
    verdict: str
    row: str  # the published row's provenance


def pairs(runs: Iterable[Any], found: Sequence[Counterpart]) -> list[Pair]:
    """Every (run, benchmark) with a published counterpart, with that run's value and the row's numbers."""
    from pytest_genai.stats import median_interval

    out = []
    for run in runs:
        for record in run.records:
            for c in found:
                verdict = check_record(record, c)
                if verdict is None:
                    continue
                m = record.measurement(c.metric)  # a verdict: the record has the metric
                iv = median_interval(m.rounds) if m.rounds else None
                generation = record.device.generation if record.device else "-"
                out.append(Pair(run.source, f"{record.label} · {generation}", c.metric,
                                c.row.units.get(c.metric, ""), m.value,
                                iv.lo if iv else None, iv.hi if iv else None, c.published, c.claim().min or 0.0,
                                verdict.verdict, c.row.provenance.text()))
    return out


def plot_pairs(found: Sequence[Pair], path: str | Path) -> Path:
    """Draw ``found`` into the PNG ``path`` (``PlotsUnavailable`` without matplotlib)."""
    from pytest_genai.report.plots import _literal_text

    return _literal_text(_draw)(list(found), Path(path))


def _draw(found: list[Pair], path: Path) -> Path:
    from pytest_genai.report.plots import _new_figure, _save

    columns = list(dict.fromkeys(p.benchmark for p in found))
    runs = list(dict.fromkeys(p.run for p in found))
    fig = _new_figure((max(6.0, 1.6 * len(columns) + 3), 4.8))
    ax = fig.add_subplot()
    width = 0.6 / max(1, len(runs))
    for j, run in enumerate(runs):
        mine = [p for p in found if p.run == run]
        xs = [columns.index(p.benchmark) - 0.3 + width * (j + 0.5) for p in mine]
        ys = [p.measured for p in mine]
        err = [[p.measured - p.lo if p.lo is not None else 0 for p in mine],
               [p.hi - p.measured if p.hi is not None else 0 for p in mine]]
        ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=3, label=f"measured: {Path(run).name}")
    published = {p.benchmark: p for p in found}
    xs = [columns.index(b) for b in published]
    ax.scatter(xs, [p.published for p in published.values()], marker="D", facecolors="none", edgecolors="black",
               s=60, zorder=3, label="published (vendor)")
    ax.scatter(xs, [p.floor for p in published.values()], marker="_", color="black", s=300, zorder=3,
               label="publisher's acceptance floor")
    ax.set_xticks(range(len(columns)), [c if len(c) <= 48 else c[:45] + "..." for c in columns], rotation=15,
                  ha="right", fontsize=7)
    metric = found[0].metric
    ax.set_ylabel(f"{metric} ({found[0].unit})" if found[0].unit else metric)
    ax.set_ylim(bottom=0)
    ax.set_xlim(-0.6, len(columns) - 0.4)
    ax.set_title("Runs beside the published numbers (reference verdicts)", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)
