"""Run-to-run change as pytest-benchmark's ``--benchmark-compare-fail=metric:N%`` defines it, by metric direction."""

from __future__ import annotations

import math

_EPS = 1e-9


def relative_change(baseline: float, current: float) -> float:
    """``(current - baseline) / |baseline|``: 0 for equal values, ±inf from 0, nan for a non-finite input."""
    if not (math.isfinite(baseline) and math.isfinite(current)):
        return math.nan
    if current == baseline:
        return 0.0
    return math.copysign(math.inf, current) if baseline == 0 else (current - baseline) / abs(baseline)


def worsening(baseline: float, current: float, direction: str) -> float:
    """Relative change in the bad direction for ``direction`` ("higher"/"lower" is better); > 0 means worse."""
    if direction not in ("higher", "lower", "none"):
        raise ValueError(f"direction {direction!r} is not 'higher', 'lower' or 'none'")
    change = relative_change(baseline, current)
    return -change if direction == "higher" else change if direction == "lower" else 0.0


def is_regression(baseline: float, current: float, direction: str, max_regression: float) -> bool:
    """``current`` is worse than ``baseline`` by more than ``max_regression``; a non-finite ``current`` always is."""
    if not math.isfinite(baseline):
        return False
    if not math.isfinite(current):
        return direction in ("higher", "lower")
    return worsening(baseline, current, direction) > max_regression * (1 + _EPS) + _EPS


def speedup(baseline: float, current: float, direction: str) -> float:
    """How many times faster ``current`` is than ``baseline`` (> 1 is faster); nan where undefined."""
    num, den = (current, baseline) if direction == "higher" else (baseline, current)
    ok = direction in ("higher", "lower") and math.isfinite(num) and math.isfinite(den) and den != 0
    return num / den if ok else math.nan
