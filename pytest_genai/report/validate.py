"""What the gate refuses to judge: a run whose numbers contradict themselves (exit 2, naming file and metric)."""
from __future__ import annotations

import math
from typing import Any, Mapping

from pytest_genai.results.errors import ReportInputError
from pytest_genai.results.registry import UNIT_SCALES
from pytest_genai.results.runs import Run


def _inside(value: float, lo: float, hi: float) -> bool:
    slack = 1e-9 * max(abs(lo), abs(hi), 1e-300)  # an end written with rounding still holds its value
    return lo - slack <= value <= hi + slack


def check_consistent(run: Run, info: Mapping[str, Any]) -> None:
    """Raise :class:`ReportInputError` at the first metric of ``run`` that cannot be a measurement."""
    for rec in run.records:
        for name, value in rec.metrics.items():
            where, m = f"{run.source}: benchmark {rec.label}, metric {name}", rec.measurement(name)
            unit, rounds, ends = m.unit or getattr(info.get(name), "unit", "") or "", m.rounds, m.interval
            if unit and UNIT_SCALES.get(unit.strip(), ("",))[0] == "time":
                if value is None or not math.isfinite(value) or value <= 0:
                    raise ReportInputError(f"{where}: a time of {value} {unit} is not a measurement; record a "
                                           "positive, finite time (or leave the metric out)")
                if rounds and min(rounds) <= 0:
                    raise ReportInputError(f"{where}: a round of {min(rounds):g} {unit} is not a measured time; "
                                           "record every round's positive time")
            if value is None or not math.isfinite(value):
                continue  # a nan/inf value is the run's own result: the gate reads it as 'not finite'
            if rounds and not _inside(value, min(rounds), max(rounds)):
                raise ReportInputError(f"{where}: the value {value:g} lies outside its own rounds "
                                       f"[{min(rounds):g}, {max(rounds):g}]; record the statistic of the rounds "
                                       "(their median) as the value, or the rounds of that value")
            if ends and not _inside(value, ends[0], ends[1]):
                raise ReportInputError(f"{where}: the value {value:g} lies outside its own interval "
                                       f"[{ends[0]:g}, {ends[1]:g}] (metric_intervals); record the interval of that "
                                       "value")
