"""A baseline formed from several runs (``--baseline "generation=h100 last:5"``): one run whose benchmarks carry every
run's values, so the gate can judge each metric against the spread between runs, not only the rounds inside one.

Benchmarks are matched across the runs as two runs are (:func:`.matching.match_records`, against the newest run); a
benchmark the newest run lacks is taken from the newest run that has it. Each metric's value is the median of the runs'
values, its rounds are the newest run's, and :attr:`.runs.Record.run_rounds` holds every run's rounds (its one value
where a run kept none), newest first.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Sequence

from .runs import Record, Run


def _key(rec: Record) -> tuple[Any, ...]:
    return rec.key, None if rec.device is None else (rec.device.kind, rec.device.generation)


def combine_runs(runs: Sequence[Run], label: str) -> Run:
    """One baseline :class:`Run` from ``runs`` (newest first), labelled ``label``."""
    if not runs:
        raise ValueError("combine_runs needs at least one run")
    groups: dict[tuple[Any, ...], list[Record]] = {}
    order: list[tuple[Any, ...]] = []
    for run in runs:
        for rec in run.records:
            key = _key(rec)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(rec)
    records = []
    for key in order:
        recs = groups[key]
        newest = recs[0]
        names = list(dict.fromkeys(m for r in recs for m in r.metrics))
        metrics: dict[str, float] = {}
        run_rounds: dict[str, tuple[tuple[float, ...], ...]] = {}
        for name in names:
            finite = [r for r in recs if name in r.metrics and r.metrics[name] == r.metrics[name]
                      and abs(r.metrics[name]) != float("inf")]
            if not finite:
                metrics[name] = next(r.metrics[name] for r in recs if name in r.metrics)
                continue
            unit = finite[0].units.get(name, "")
            finite = [r for r in finite if r.units.get(name, "") == unit]  # a run in another unit is not averaged in
            metrics[name] = statistics.median(r.metrics[name] for r in finite)
            if len(finite) >= 2:
                run_rounds[name] = tuple(r.rounds.get(name) or (float(r.metrics[name]),) for r in finite)
        records.append(dataclasses.replace(
            newest, metrics=metrics, run_rounds=run_rounds,
            sources={k: v for r in reversed(recs) for k, v in r.sources.items()},
            units={k: v for r in reversed(recs) for k, v in r.units.items()}))
    first = runs[0]
    warnings = tuple(w for run in runs for w in run.warnings)
    return Run(label, tuple(records), first.devices, warnings, first.datetime, first.absent, first.stack)
