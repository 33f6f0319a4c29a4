"""Confidence intervals for timing verdicts: pure functions, no numpy or scipy needed.

Paired, interleaved rounds get :func:`median_interval` (the per-round ratio cancels slow drifts of machine load);
bootstraps are seeded so a verdict is reproducible from its JSON.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random
import re
import statistics
from collections.abc import Callable, Sequence

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
    return 1.0 - 2.0 * (sum(math.comb(n, i) for i in range(k)) / 2**n)


def median_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """Order-statistic interval ``[x(k), x(n+1-k)]`` of the median, largest ``k`` reaching ``level`` (or ``k = 1``)."""
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


def _bootstrap(draw: Callable[[], float], resamples: int, level: float, n: int, method: str,
               keep: float | None = None) -> Interval:
    """Percentile interval of ``resamples`` draws (widened to hold ``keep``), its level capped at ``1 - 2^(1-n)``:
    the coverage of ``n`` values' ``[min, max]`` for their median bounds what a bootstrap of so few values covers."""
    ordered, tail = sorted(draw() for _ in range(resamples)), (1.0 - level) / 2
    lo = ordered[max(0, math.floor(tail * resamples))]
    hi = ordered[min(resamples - 1, math.ceil((1.0 - tail) * resamples) - 1)]
    if keep is not None:
        lo, hi = min(lo, keep), max(hi, keep)
    return Interval(lo, hi, min(level, median_coverage(n, 1)), n, method)


def bootstrap_ratio_interval(num: Sequence[float], den: Sequence[float], level: float = LEVEL,
                             resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of ``median(num) / median(den)`` for two unpaired samples."""
    a, b = _finite(num, "bootstrap numerator"), _finite(den, "bootstrap denominator")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"bootstrap_ratio_interval needs at least 2 values per side, got {len(a)} and {len(b)}")
    if min(b) <= 0:
        raise ValueError("bootstrap_ratio_interval: the denominator sample must be positive")
    rng = random.Random(seed)
    return _bootstrap(lambda: statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b))),
                      resamples, level, min(len(a), len(b)), "ratio of medians, percentile bootstrap")


def hierarchical_ratio_interval(num_groups: Sequence[Sequence[float]], den_groups: Sequence[Sequence[float]],
                                level: float = LEVEL, resamples: int = 2000, seed: int = 0) -> Interval:
    """Interval of ``mean(job medians of num) / mean(job medians of den)`` by a two-stage bootstrap (jobs, then each
    drawn job's values), so a load change between jobs widens it."""
    sides = []
    for what, groups in (("numerator", num_groups), ("denominator", den_groups)):
        jobs = [_finite(g, f"hierarchical bootstrap {what}") for g in groups]
        if len(jobs) < 2 or min(len(j) for j in jobs) < 2:
            raise ValueError(f"hierarchical_ratio_interval needs at least 2 jobs of at least 2 values per side; the "
                             f"{what} has {[len(j) for j in jobs]}")
        sides.append(jobs)
    if min(min(j) for j in sides[1]) <= 0:
        raise ValueError("hierarchical_ratio_interval: the denominator values must be positive")
    rng = random.Random(seed)

    def draw(jobs: list[list[float]]) -> float:
        picked = rng.choices(jobs, k=len(jobs))
        return statistics.fmean(statistics.median(rng.choices(j, k=len(j))) for j in picked)

    return _bootstrap(lambda: draw(sides[0]) / draw(sides[1]), resamples, level, min(map(len, sides)),
                      "ratio of mean job medians, two-stage bootstrap (jobs, then steps)")


def bootstrap_medians_interval(groups: Sequence[Sequence[float]], statistic: Callable[[list[float]], float],
                               level: float = LEVEL, resamples: int = 2000, seed: int = 0,
                               method: str = "statistic of medians") -> Interval:
    """Bootstrap interval of ``statistic([median(g) for g in groups])``, always holding the statistic's own value:
    conservative for a max on purpose (a bias correction would hide a slow spell instead of widening for it)."""
    samples = [_finite(g, f"bootstrap group #{i}") for i, g in enumerate(groups)]
    if not samples or min(len(g) for g in samples) < 2:
        raise ValueError(f"bootstrap_medians_interval needs at least one group of at least 2 values per group, "
                         f"got group sizes {[len(g) for g in samples]}")
    if not 0 < level < 1:
        raise ValueError(f"level={level} must be between 0 and 1")
    value = float(statistic([statistics.median(g) for g in samples]))
    rng = random.Random(seed)
    return _bootstrap(lambda: float(statistic([statistics.median(rng.choices(g, k=len(g))) for g in samples])),
                      resamples, level, min(len(g) for g in samples), f"{method}, percentile bootstrap", keep=value)


def binom_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, summed exactly in log space (no scipy needed)."""
    if k < 0 or (k < n and p >= 1.0):
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p)
             + (n - i) * math.log1p(-p) for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def _bisect(f, lo: float, hi: float) -> float:
    """The root of a function increasing from ``f(lo) <= 0`` to ``f(hi) >= 0`` (to 1e-12)."""
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided interval of a binomial proportion from ``k`` successes in ``n`` trials."""
    if not (isinstance(k, int) and isinstance(n, int)) or n < 1 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson needs integers 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}")
    if not 0 < level < 1:
        raise ValueError(f"level={level} must be between 0 and 1")
    tail = (1.0 - level) / 2
    lo = 0.0 if k == 0 else _bisect(lambda p: (1.0 - binom_cdf(k - 1, n, p)) - tail, 0.0, 1.0)
    hi = 1.0 if k == n else _bisect(lambda p: tail - binom_cdf(k, n, p), 0.0, 1.0)
    return lo, hi


def mcnemar_exact_p(to_wrong: int, to_right: int) -> float:
    """McNemar's exact two-sided p-value that the discordant pairs split evenly: ``min(1, 2 P(X <= min(b, c)))``."""
    if to_wrong < 0 or to_right < 0:
        raise ValueError(f"discordant counts must be >= 0, got {to_wrong} and {to_right}")
    return min(1.0, 2.0 * binom_cdf(min(to_wrong, to_right), to_wrong + to_right, 0.5))  # no pairs: 1


def paired_drop_interval(to_wrong: int, to_right: int, n: int, level: float = LEVEL) -> Interval:
    """Exact interval of a paired accuracy drop ``(b - c) / n``: ``b`` answers turned wrong, ``c`` right, of ``n``.

    The drop is ``pi * (2 theta - 1)`` (``pi``: discordant share, ``theta``: their share turned wrong); each gets an
    exact interval at ``1 - (1 - level) / 2`` (Bonferroni), and the drop's is its range over that box."""
    if n < 1 or to_wrong < 0 or to_right < 0 or to_wrong + to_right > n:
        raise ValueError(f"paired_drop_interval: need 0 <= to_wrong + to_right <= n and n >= 1, got "
                         f"to_wrong={to_wrong}, to_right={to_right}, n={n}")
    each = 1.0 - (1.0 - level) / 2
    discordant = to_wrong + to_right
    pi_lo, pi_hi = clopper_pearson(discordant, n, each)
    th_lo, th_hi = clopper_pearson(to_wrong, discordant, each) if discordant else (0.0, 1.0)
    corners_hi = (pi_lo * (2 * th_hi - 1), pi_hi * (2 * th_hi - 1))
    corners_lo = (pi_lo * (2 * th_lo - 1), pi_hi * (2 * th_lo - 1))
    return Interval(min(corners_lo), max(corners_hi), level, n,
                    f"McNemar exact, discordant {to_wrong}/{to_right}, p={mcnemar_exact_p(to_wrong, to_right):.2g}")


def paired_counts(interval: Interval) -> tuple[int, int] | None:
    """The flips each way (to wrong, to right) behind an interval :func:`paired_drop_interval` made, else None."""
    match = re.match(r"McNemar exact, discordant (\d+)/(\d+)(,|\Z)", interval.method)
    return (int(match[1]), int(match[2])) if match else None


def examples_to_decide(to_wrong: int, to_right: int, n: int, lo: float | None, hi: float | None,
                       level: float = LEVEL, limit: int = 1_000_000) -> int | None:
    """About how many examples the same flip rates need to decide ``[lo, hi]`` (None: not within ``limit``)."""
    def decides(total: int) -> bool:
        iv = paired_drop_interval(round(to_wrong * total / n), round(to_right * total / n), total, level)
        inside = (lo is None or iv.lo >= lo) and (hi is None or iv.hi <= hi)
        return inside or (hi is not None and iv.lo > hi) or (lo is not None and iv.hi < lo)

    low, high = n, n
    while not decides(high):
        low, high = high, high * 2
        if high > limit:
            return None
    while high - low > max(1, low // 100):  # to 1%: an estimate from the rates seen, not an exact count
        mid = (low + high) // 2
        low, high = (low, mid) if decides(mid) else (mid, high)
    return high


@functools.lru_cache(maxsize=64)  # one per (level, run count): the gate asks the same for every metric
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom (bisection on a Simpson CDF)."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def pdf(x: float) -> float:
        return c * (1 + x * x / df) ** (-(df + 1) / 2)

    def cdf(t: float) -> float:
        h = t / 4000
        total = pdf(0.0) + pdf(t)
        total += sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, 4000))
        return 0.5 + total * h / 3

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        lo, hi = hi, hi * 2
    return _bisect(lambda t: cdf(t) - p, lo, hi)


def run_spread_interval(current: Sequence[float], baseline_runs: Sequence[Sequence[float]],
                        level: float = LEVEL) -> Interval:
    """Prediction interval of ``median(current) / baseline`` over ``N >= 2`` baseline runs (rounds inside one run
    understate the variance between runs): ``log ratio +- t(N - 1) * s * sqrt(1 + 1/N)`` on log run medians."""
    runs = [_finite(r, "run_spread_interval baseline run") for r in baseline_runs]
    cur = _finite(current, "run_spread_interval current")
    if len(runs) < 2 or any(not r for r in runs) or not cur:
        raise ValueError(f"run_spread_interval needs a current value and at least 2 baseline runs, got "
                         f"{len(runs)} run(s)")
    medians = [statistics.median(r) for r in runs]
    if min(medians) <= 0 or statistics.median(cur) <= 0:
        raise ValueError("run_spread_interval: the run medians must be positive")
    logs = [math.log(m) for m in medians]
    n = len(logs)
    center = math.log(statistics.median(cur)) - statistics.fmean(logs)
    half = t_quantile(1 - (1 - level) / 2, n - 1) * statistics.stdev(logs) * math.sqrt(1 + 1 / n)
    return Interval(math.exp(center - half), math.exp(center + half), level, n,
                    f"run-to-run prediction interval over {n} baseline runs (Student t on log run medians)")
