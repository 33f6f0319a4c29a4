"""Metric-by-metric comparison of two runs (``pytest-genai compare``), the basis of the gate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from pytest_genai.identity import environment_differences
from pytest_genai.stack import stack_differences

from .deltas import is_regression, relative_change, worsening
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
BASELINE_UNUSABLE = "baseline unusable"
"""The baseline value is nan/inf: nothing to compare the current value with; not counted as gated."""

FAILING = (REGRESSED, NOT_FINITE)
"""Statuses the gate always fails on; ``MISSING_CURRENT`` fails it only with ``--strict``."""

GATED = (REGRESSED, NOT_FINITE, WORSE, BETTER, SAME)
"""Statuses of a value that was actually judged against its threshold."""

_DIRECTED = ("higher", "lower")


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

    @property
    def gated(self) -> bool:
        """True when the value was judged against its threshold (counted as a gated value)."""
        return self.status in GATED

    @property
    def improved_past_limit(self) -> bool:
        """True when the value got better by more than its threshold (worth a look: a real change, or noise)."""
        if self.status != BETTER or self.max_regression is None or self.baseline is None or self.current is None:
            return False
        assert self.direction in _DIRECTED
        return -worsening(self.baseline, self.current, self.direction) > self.max_regression * (1 + 1e-9) + 1e-9


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

    def metrics_where(self, status: str | tuple[str, ...]) -> list[tuple[PairComparison, MetricComparison]]:
        wanted = (status,) if isinstance(status, str) else status
        return [(pc, m) for pc in self.pairs for m in pc.metrics if m.status in wanted]

    @property
    def gated_count(self) -> int:
        """Metric values judged against a threshold (not: missing, new, undirected, or with an unusable baseline)."""
        return sum(1 for pc in self.pairs for m in pc.metrics if m.gated)

    @property
    def improved(self) -> list[tuple[PairComparison, MetricComparison]]:
        """Metric values that got better by more than their threshold."""
        return [(pc, m) for pc in self.pairs for m in pc.metrics if m.improved_past_limit]

    @property
    def environment_differences(self) -> list[tuple[str, int]]:
        """How the paired benchmarks' environments differ (``threads 2 -> 16``, ``data_source: folder differs
        (test.raw)``), each with the number of pairs it holds for, in first-seen order. Never part of the key."""
        counts: dict[str, int] = {}
        keys: dict[str, int] = {}  # lines of one key together, keys in first-seen order
        for pc in self.pairs:
            for line in environment_differences(pc.pair.baseline.environment, pc.pair.current.environment):
                counts[line] = counts.get(line, 0) + 1
                keys.setdefault(line.split(" ", 1)[0].rstrip(":"), len(keys))
        return sorted(counts.items(), key=lambda item: keys[item[0].split(" ", 1)[0].rstrip(":")])


    @property
    def stack_differences(self) -> list[str]:
        """Which software-stack items differ between the two runs (``torch 2.5.1 -> 2.6.0``): environment, shown
        next to the regressions because a changed library is the first suspect; never part of the key."""
        return stack_differences(self.baseline.stack, self.current.stack)


def fails(mc: "MetricComparison", *, strict: bool = False, allow_missing: bool = False) -> bool:
    """Whether ``mc`` fails the gate: a regression or a nan/inf current value; a metric with a direction that is
    missing from the current run (absent, or recorded as null or not a number) unless ``allow_missing`` -- a
    throughput that stopped being recorded must not pass as "nothing regressed"; with ``strict`` any missing metric."""
    if mc.status in FAILING:
        return True
    if mc.status == MISSING_CURRENT:
        return strict or (not allow_missing and mc.direction in _DIRECTED)
    return False


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
    if current is not None and not math.isfinite(current) and direction in _DIRECTED:
        status = NOT_FINITE  # a run that produced nan/inf did not reproduce a number, whatever the baseline was
    elif baseline is None:
        status = MISSING_BASELINE
    elif current is None:
        status = MISSING_CURRENT
    elif not math.isfinite(baseline):
        status = BASELINE_UNUSABLE if direction in _DIRECTED else (NO_DIRECTION if direction else UNREGISTERED)
    elif not math.isfinite(current):
        status = NO_DIRECTION if direction else UNREGISTERED
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
    limit = max_regression if direction in _DIRECTED and status in GATED else None
    return MetricComparison(metric, unit, direction, baseline, current, change, limit, status, source)


def compare_records(
    base: Record, cur: Record, info: Mapping[str, MetricInfo], thresholds: Thresholds
) -> tuple[MetricComparison, ...]:
    """Every metric of a matched pair, baseline's metrics first, then metrics new in ``cur``."""
    names = list(base.metrics) + [m for m in cur.metrics if m not in base.metrics]
    # pytest-benchmark statistics other than the median: compared only when a threshold names them (mean:5%)
    timing = {m: f for m, f in thresholds.timing_fields().items() if m not in names}
    names += [m for m, f in timing.items() if f in base.timing or f in cur.timing]
    experiment = cur.experiment or base.experiment
    out = []
    for name in names:
        unit = cur.units.get(name) or base.units.get(name) or ("s" if name in timing else "")
        out.append(
            compare_metric(
                name,
                base.metrics.get(name, base.timing.get(timing.get(name, ""))),
                cur.metrics.get(name, cur.timing.get(timing.get(name, ""))),
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
