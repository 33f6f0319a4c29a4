"""Several runs as one baseline (``last:5``): each metric's median, and every run's rounds (``Record.run_rounds``)
so the gate judges each metric against the spread between runs, not only the rounds inside one."""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Sequence

from .errors import ReportInputError
from .registry import unit_factor
from .runs import Record, Run


def _factor(unit: str, target: str, name: str, rec: Record, label: str) -> float:
    factor = unit_factor(unit, target) if unit and target else 1.0
    if factor is None:
        raise ReportInputError(f"{label}: benchmark {rec.label}, metric {name}: the runs record it in {unit!r} and "
                               f"{target!r}, with no known conversion; take runs recorded in one unit (a query filter) "
                               "or record both in one unit")
    return factor


def combine_runs(runs: Sequence[Run], label: str) -> Run:
    """One baseline :class:`Run` from ``runs`` (newest first), labelled ``label``."""
    if not runs:
        raise ValueError("combine_runs needs at least one run")
    groups: dict[tuple[Any, ...], list[Record]] = {}  # in first-seen order
    for rec in (rec for run in runs for rec in run.records):
        groups.setdefault((rec.key, rec.device and (rec.device.kind, rec.device.generation)), []).append(rec)
    records = []
    for recs in groups.values():
        metrics: dict[str, float] = {}
        run_rounds: dict[str, tuple[tuple[float, ...], ...]] = {}
        units_of: dict[str, str] = {}
        for name in dict.fromkeys(m for r in recs for m in r.metrics):
            finite = [(r, m) for r in recs if (m := r.measurement(name)) and math.isfinite(m.value)]
            if not finite:
                metrics[name] = next(r.metrics[name] for r in recs if name in r.metrics)
                continue
            # the newest run's (recs[0]) unit labels the baseline row
            unit = next((m.unit for m in (recs[0].measurement(name), finite[0][1]) if m and m.unit), "")
            factors = [_factor(m.unit or unit, unit, name, r, label) for r, m in finite]
            metrics[name] = statistics.median(m.value * f for (_, m), f in zip(finite, factors))
            if len(finite) >= 2:
                run_rounds[name] = tuple(tuple(x * f for x in m.rounds or (float(m.value),))
                                         for (_, m), f in zip(finite, factors))
            units_of[name] = unit
        records.append(dataclasses.replace(
            recs[0], metrics=metrics, run_rounds=run_rounds,
            sources={k: v for r in reversed(recs) for k, v in r.sources.items()},
            units={**{k: v for r in reversed(recs) for k, v in r.units.items()}, **units_of}))
    first, warnings = runs[0], tuple(w for run in runs for w in run.warnings)
    return Run(label, tuple(records), first.devices, warnings, first.datetime, first.absent, first.stack)
