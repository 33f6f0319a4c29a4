"""Confidence intervals for timing verdicts: pure functions, no numpy or scipy needed.

A timing claim is judged on an interval, not on one number: ``pass`` or ``fail`` only when the whole interval
clears the bound (see :func:`pytest_genai.claims.check.check_value`), ``inconclusive`` otherwise. Two designs:

* :func:`median_interval` — paired, interleaved rounds: each round measures both sides of a ratio back to back,
  so the per-round ratio cancels slow drifts of machine load. The interval is the distribution-free order-statistic
  interval for the median (binomial, exact): ``[x(k), x(n+1-k)]`` of the sorted values, with the largest ``k``
  whose coverage is at least ``level``. Too few rounds for ``level`` give ``[min, max]`` and say their real
  coverage (5 rounds: 0.9375).
* :func:`bootstrap_ratio_interval` — two unpaired samples (e.g. the step times of two separate runs): percentile
  bootstrap of the ratio of their medians, seeded so a run's verdict is reproducible from its JSON.
"""
from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Sequence

LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval of a statistic, with how it was obtained."""

    lo: float
    hi: float
    level: float  # the interval's coverage (may be below the requested level when n is small)
    n: int  # rounds (or the smaller sample) behind it
    method: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            raise ValueError(f"interval [{self.lo}, {self.hi}] is not finite")
        if self.lo > self.hi:
            raise ValueError(f"interval lower end {self.lo} is above its upper end {self.hi}")

    def to_json(self) -> dict[str, float | int | str]:
        return dataclasses.asdict(self)

    def text(self) -> str:
        return f"[{self.lo:.4g}, {self.hi:.4g}] ({self.level:.0%} CI, {self.method}, n={self.n})"


def _finite(values: Sequence[float], what: str) -> list[float]:
    out = [float(v) for v in values]
    bad = [v for v in out if not math.isfinite(v)]
    if bad:
        raise ValueError(f"{what}: non-finite value(s) {bad[:3]}; every round must be a finite number")
    return out


def median_coverage(n: int, k: int) -> float:
    """Coverage of ``[x(k), x(n+1-k)]`` for the median of ``n`` i.i.d. values: ``1 - 2 P(Bin(n, 1/2) <= k-1)``."""
    if not 1 <= k <= (n + 1) // 2:
        raise ValueError(f"k={k} must be in 1..{(n + 1) // 2} for n={n}")
    tail = sum(math.comb(n, i) for i in range(k)) / 2**n
    return 1.0 - 2.0 * tail


def median_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """The order-statistic confidence interval of the median of ``values`` (one value per round)."""
    xs = sorted(_finite(values, "median_interval"))
    n = len(xs)
    if n < 2:
        raise ValueError(f"median_interval needs at least 2 rounds, got {n}; record every round's value")
    if not 0 < level < 1:
        raise ValueError(f"level={level} must be between 0 and 1")
    k = 1
    while k + 1 <= (n + 1) // 2 and median_coverage(n, k + 1) >= level:
        k += 1
    return Interval(xs[k - 1], xs[n - k], median_coverage(n, k), n, "median of rounds, order statistics")


def bootstrap_ratio_interval(num: Sequence[float], den: Sequence[float], level: float = LEVEL,
                             resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of ``median(num) / median(den)`` for two unpaired samples."""
    a, b = _finite(num, "bootstrap numerator"), _finite(den, "bootstrap denominator")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"bootstrap_ratio_interval needs at least 2 values per side, got {len(a)} and {len(b)}")
    if min(b) <= 0:
        raise ValueError("bootstrap_ratio_interval: the denominator sample must be positive")
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
        for _ in range(resamples)
    )
    tail = (1.0 - level) / 2
    lo = ratios[max(0, math.floor(tail * resamples))]
    hi = ratios[min(resamples - 1, math.ceil((1.0 - tail) * resamples) - 1)]
    return Interval(lo, hi, level, min(len(a), len(b)), "ratio of medians, percentile bootstrap")
