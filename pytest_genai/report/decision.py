"""The gate's one decision rule for a metric with rounds on both sides: Welch's t on the log rounds (docs/report.md).

Pure Python (no numpy or scipy), so the plugin and the CLI import without them. With ``w`` the worsening of the mean
log round and the threshold as the margin ``M``: ``regressed`` when worse at one-sided ``ALPHA`` and ``w > M``,
``improved`` the same the other way, ``unchanged`` when ``w + q SE <= M``, else ``inconclusive``; rounds holding zero
or a negative value take the same test on raw values.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Sequence

ALPHA = 0.01  # one-sided significance of a decided regression (and improvement): the false alarms at no change

REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE = "regressed", "improved", "unchanged", "inconclusive"

LOG, RAW = "log", "raw"


@dataclass(frozen=True)
class Decision:
    """The verdict on one metric's two sets of rounds, and what it rests on."""

    verdict: str
    ratio: float  # current / baseline: the geometric means' ratio (raw scale: the means' ratio, or nan)
    lo: float  # lo, hi: the ``1 - 2 ALPHA`` two-sided interval of the ratio (raw scale: of current - baseline)
    hi: float
    level: float
    df: float
    p_worse: float  # one-sided p-value of 'no worsening' (small: worse)
    past_margin: bool  # the estimate is worse than the threshold
    scale: str = LOG
    n: int = 0
    launch_share: float = 0.0  # the share of the estimate's variance that the run noise (launch to launch) adds

    @property
    def undecided(self) -> bool:
        return self.verdict == INCONCLUSIVE and self.past_margin

    @property
    def method(self) -> str:
        what = "log rounds" if self.scale == LOG else "raw rounds (a round is zero or negative, so no log)"
        noise = f", run noise {self.launch_share:.0%} of the variance" if self.launch_share else ""
        return f"Welch t on {what}{noise}, df {self.df:.3g}, one-sided alpha {ALPHA:g}"

    def to_json(self) -> dict[str, float | int | str]:
        out: dict[str, float | int | str] = {"lo": self.lo, "hi": self.hi, "level": self.level, "n": self.n,
                                             "method": self.method, "df": self.df, "p_worse": self.p_worse,
                                             "scale": self.scale}
        return {**out, "launch_share": self.launch_share} if self.launch_share else out


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    def away_from_zero(v: float) -> float:
        return v if abs(v) > 1e-300 else 1e-300

    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 / away_from_zero(1.0 - qab * x / qap)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        # the even then the odd step of the fraction
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 / away_from_zero(1.0 + aa * d)
            c = away_from_zero(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 3e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df`` (real, > 0) degrees of freedom."""
    if df <= 0 or math.isnan(t) or math.isnan(df):
        raise ValueError(f"t_sf needs df > 0 and a number, got t={t}, df={df}")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if df > 1e7:  # the normal limit (a known variance term dominates)
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


def z_ppf(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile (``0.5 < p < 1``) of Student's t with ``df`` degrees of freedom, by bisection."""
    if not 0.5 < p < 1 or df <= 0:
        raise ValueError(f"t_ppf needs 0.5 < p < 1 and df > 0, got p={p}, df={df}")
    if df > 1e7:
        return z_ppf(p)
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > 1 - p:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > 1 - p else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


def margin(threshold: float, direction: str) -> float:
    """The threshold as a log-scale margin: a rise of ``threshold`` (lower is better) or a drop of it (under 100%)."""
    if direction == "lower":
        return math.log1p(threshold)
    if direction == "higher":
        if not 0 <= threshold < 1:
            raise ValueError(f"a drop of {threshold:.0%} is not possible for a higher-is-better metric; "
                             "give a threshold under 100%")
        return -math.log1p(-threshold)
    raise ValueError(f"direction {direction!r} has no better side; only 'higher' or 'lower' is gated")


def _welch(xs_c: Sequence[float], xs_b: Sequence[float]) -> tuple[float, float, float]:
    """(mean difference current - baseline, its standard error, Welch-Satterthwaite df)."""
    nc, nb = len(xs_c), len(xs_b)
    vc, vb = statistics.variance(xs_c) / nc, statistics.variance(xs_b) / nb
    se2 = vc + vb
    diff = statistics.fmean(xs_c) - statistics.fmean(xs_b)
    if se2 <= 0:
        return diff, 0.0, float(nc + nb - 2)
    df = se2 * se2 / ((vc * vc / (nc - 1) if vc else 0.0) + (vb * vb / (nb - 1) if vb else 0.0))
    return diff, math.sqrt(se2), max(df, float(min(nc, nb) - 1))


def decide(baseline: Sequence[float], current: Sequence[float], direction: str, threshold: float,
           alpha: float = ALPHA, interval: bool = True, run_noise: float = 0.0) -> Decision:
    """The verdict on ``current``'s rounds against ``baseline``'s (two finite rounds a side) at an allowed worsening
    ``threshold``. ``interval=False`` leaves the interval's ends nan, for speed. ``run_noise``: the SD of a run's log
    mean between launches, which rounds inside one run cannot show; each side adds its square to the variance."""
    b, c = [float(x) for x in baseline], [float(x) for x in current]
    if len(b) < 2 or len(c) < 2:
        raise ValueError(f"decide needs two rounds a side, got {len(b)} and {len(c)}")
    if not all(math.isfinite(x) for x in b + c):
        raise ValueError("decide needs finite rounds")
    sign = 1.0 if direction == "lower" else -1.0
    m = margin(threshold, direction)
    positive = min(b) > 0 and min(c) > 0
    launch_share = 0.0
    if positive:
        diff, se, df = _welch([math.log(x) for x in c], [math.log(x) for x in b])
        if run_noise > 0:  # a known variance: it adds to the standard error, not to the df's uncertainty
            within2, se = se * se, math.sqrt(se * se + 2 * run_noise * run_noise)
            launch_share = 1 - within2 / (se * se)
            df = df * (se * se / within2) ** 2 if within2 > 0 else math.inf
        ratio = math.exp(diff)
    else:
        diff, se, df = _welch(c, b)
        mean_b, mean_c = statistics.fmean(b), statistics.fmean(c)
        # the margin in raw units; zero-sized sides give a zero margin, so only a significant change can move them
        m = threshold * max(abs(mean_b), abs(mean_c))
        ratio = mean_c / mean_b if mean_b else math.nan
    w, scale = sign * diff, LOG if positive else RAW
    if se == 0:
        p_worse, p_better = (0.0, 1.0) if w > 0 else (1.0, 0.0) if w < 0 else (0.5, 0.5)
        p_within = 0.0 if w <= m else 1.0
    else:
        p_worse, p_better = t_sf(w / se, df), t_sf(-w / se, df)
        p_within = t_sf((m - w) / se, df)  # <= alpha: the one-sided upper bound w + q SE is within the margin
    tol = m * 1e-9 + 1e-12
    past = w > m + tol
    verdict = (REGRESSED if p_worse < alpha and past else IMPROVED if p_better < alpha and -w > m + tol
               else UNCHANGED if p_within <= alpha else INCONCLUSIVE)
    q = t_ppf(1 - alpha, df) if interval else math.nan  # no interval: nan ends
    lo, hi = (math.exp(diff - q * se), math.exp(diff + q * se)) if positive else (diff - q * se, diff + q * se)
    return Decision(verdict, ratio, lo, hi, 1 - 2 * alpha, df, p_worse, past, scale, min(len(b), len(c)),
                    launch_share)


def ratio_verdict(lo: float, hi: float, direction: str, threshold: float) -> str:
    """The verdict on the interval ``[lo, hi]`` of ``current / baseline``: ``regressed``/``improved`` wholly past the
    threshold, ``inconclusive`` straddling the worse one, else ``unchanged`` (``[r, r]`` as in ``is_regression``)."""
    if direction not in ("higher", "lower"):
        raise ValueError(f"direction {direction!r} has no better side; only 'higher' or 'lower' is gated")
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"interval [{lo}, {hi}] is not a finite interval")
    # the worsening (relative change in the bad direction) at each end of the interval
    w_lo, w_hi = (lo - 1.0, hi - 1.0) if direction == "lower" else (1.0 - hi, 1.0 - lo)
    limit = threshold * (1 + 1e-9) + 1e-9  # is_regression's tolerance
    return (REGRESSED if w_lo > limit else INCONCLUSIVE if w_hi > limit
            else IMPROVED if w_hi < -limit else UNCHANGED)
