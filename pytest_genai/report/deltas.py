"""Pure arithmetic of run-to-run change: relative change, worsening, regression test, speedup.

Definitions (the same ones pytest-benchmark's ``--benchmark-compare-fail=metric:N%`` uses for
timings, generalised by the metric's direction):

* relative change ``(current - baseline) / |baseline|``;
* worsening: the relative change in the *bad* direction — for a higher-is-better metric
  (tokens/s, accuracy) a drop, for a lower-is-better metric (perplexity, seconds) a rise;
* a regression is a worsening strictly greater than the allowed fraction;
* speedup (hardware-upgrade claims): ``current / baseline`` for higher-is-better metrics,
  ``baseline / current`` for lower-is-better ones, so that > 1 always means faster.
"""

from __future__ import annotations

import math

from .decision import ratio_verdict  # noqa: F401  (its home is decision.py; kept importable here)

_EPS = 1e-9


def relative_change(baseline: float, current: float) -> float:
    """``(current - baseline) / |baseline|``.

    Equal values give 0 (also when both are 0); a change from 0 gives ±inf; any non-finite
    input gives nan (a change from or to nan/inf has no meaningful size).
    """
    if not (math.isfinite(baseline) and math.isfinite(current)):
        return math.nan
    if current == baseline:
        return 0.0
    if baseline == 0:
        return math.copysign(math.inf, current)
    return (current - baseline) / abs(baseline)


def worsening(baseline: float, current: float, direction: str) -> float:
    """Relative change in the bad direction for ``direction`` ("higher"/"lower" is better); > 0 means worse.

    For direction "none" there is no bad direction and the result is 0.
    """
    change = relative_change(baseline, current)
    if direction == "higher":
        return -change
    if direction == "lower":
        return change
    if direction == "none":
        return 0.0
    raise ValueError(f"direction {direction!r} is not 'higher', 'lower' or 'none'")


def is_regression(baseline: float, current: float, direction: str, max_regression: float) -> bool:
    """True when ``current`` is worse than ``baseline`` by strictly more than the fraction ``max_regression``.

    A value exactly at the limit passes (the limit is inclusive), up to floating-point rounding.
    A non-finite ``current`` against a finite ``baseline`` is a regression (a run that produced nan or inf
    did not reproduce a number); a non-finite ``baseline`` cannot be regressed against (False).
    """
    if not math.isfinite(baseline):
        return False
    if not math.isfinite(current):
        return direction in ("higher", "lower")
    return worsening(baseline, current, direction) > max_regression * (1 + _EPS) + _EPS


def speedup(baseline: float, current: float, direction: str) -> float:
    """How many times faster ``current`` is than ``baseline`` for a metric with the given direction.

    Higher-is-better (throughput): ``current / baseline``; lower-is-better (time): ``baseline / current``.
    Returns nan when the ratio is undefined (zero or non-finite operands, or direction "none").
    """
    if direction not in ("higher", "lower"):
        return math.nan
    num, den = (current, baseline) if direction == "higher" else (baseline, current)
    if not (math.isfinite(num) and math.isfinite(den)) or den == 0:
        return math.nan
    return num / den
