"""Metric-by-metric comparison of two runs (``pytest-genai compare``), the basis of the gate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from .deltas import is_regression, relative_change
from .matching import Pair, match_records
from .registry import MetricInfo
from .runs import Record, Run
from .thresholds import Thresholds

REGRESSED = "regressed"
NOT_FINITE = "not finite"
WORSE = "worse"
BETTER = "better"
SAME = "same"
NO_DIRECTION = "no direction"
UNREGISTERED = "unregistered"
MISSING_CURRENT = "missing in current"
MISSING_BASELINE = "new in current"
BASELINE_NOT_FINITE = "baseline not finite"

FAILING = (REGRESSED, NOT_FINITE)
"""Statuses the gate always fails on; ``MISSING_CURRENT`` fails it only with ``--strict``."""


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one matched benchmark: both values, the change and its verdict."""

    metric: str
    unit: str
    direction: str | None
    baseline: float | None
    current: float | None
    change: float | None
    max_regression: float | None
    status: str
    source: str

    @property
    def ratio(self) -> float | None:
        """``current / baseline`` (None when either is missing, zero or not finite)."""
        if self.baseline is None or self.current is None:
            return None
        if self.baseline == 0 or not (math.isfinite(self.baseline) and math.isfinite(self.current)):
            return None
        return self.current / self.baseline


@dataclass(frozen=True)
class PairComparison:
    pair: Pair
    metrics: tuple[MetricComparison, ...]

    @property
    def experiment(self) -> str | None:
        return self.pair.current.experiment


@dataclass(frozen=True)
class Comparison:
    baseline: Run
    current: Run
    pairs: tuple[PairComparison, ...]
    only_baseline: tuple[Record, ...]
    only_current: tuple[Record, ...]


def _source(base: Record | None, cur: Record | None, metric: str) -> str:
    sources = {r.sources.get(metric, "measured") for r in (base, cur) if r is not None and metric in r.metrics}
    return "/".join(sorted(sources)) or "measured"


def compare_metric(
    metric: str,
    baseline: float | None,
    current: float | None,
    info: MetricInfo | None,
    max_regression: float,
    unit: str = "",
    source: str = "measured",
) -> MetricComparison:
    """Compare one metric's two values and classify the change (pure)."""
    direction = info.direction if info is not None else None
    unit = info.unit if info is not None and info.unit else unit
    change: float | None = None
    if baseline is None:
        status = MISSING_BASELINE
    elif current is None:
        status = MISSING_CURRENT
    elif not math.isfinite(baseline):
        status = BASELINE_NOT_FINITE
    elif not math.isfinite(current):
        status = NOT_FINITE if direction in ("higher", "lower") else NO_DIRECTION
    else:
        change = relative_change(baseline, current)
        if direction is None:
            status = UNREGISTERED
        elif direction == "none":
            status = NO_DIRECTION
        elif is_regression(baseline, current, direction, max_regression):
            status = REGRESSED
        elif change == 0:
            status = SAME
        elif (change > 0) == (direction == "higher"):
            status = BETTER
        else:
            status = WORSE
    limit = max_regression if direction in ("higher", "lower") else None
    return MetricComparison(metric, unit, direction, baseline, current, change, limit, status, source)


def compare_records(
    base: Record, cur: Record, info: Mapping[str, MetricInfo], thresholds: Thresholds
) -> tuple[MetricComparison, ...]:
    """Every metric of a matched pair, baseline's metrics first, then metrics new in ``cur``."""
    names = list(base.metrics) + [m for m in cur.metrics if m not in base.metrics]
    experiment = cur.experiment or base.experiment
    out = []
    for name in names:
        unit = cur.units.get(name) or base.units.get(name) or ""
        out.append(
            compare_metric(
                name,
                base.metrics.get(name),
                cur.metrics.get(name),
                info.get(name),
                thresholds.for_metric(name, experiment),
                unit=unit,
                source=_source(base, cur, name),
            )
        )
    return tuple(out)


def compare_runs(baseline: Run, current: Run, info: Mapping[str, MetricInfo], thresholds: Thresholds) -> Comparison:
    """Match the two runs' benchmarks and compare every metric of every pair."""
    matching = match_records(baseline.records, current.records)
    pairs = tuple(PairComparison(p, compare_records(p.baseline, p.current, info, thresholds)) for p in matching.pairs)
    return Comparison(baseline, current, pairs, matching.only_baseline, matching.only_current)
