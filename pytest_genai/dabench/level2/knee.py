"""Where batch-size gains plateau (Paper B, B2 deployment): pure functions over measured (batch, throughput) points.

Paper B reports near-linear gains from batch size on RDU and IPU, and gains on the WSE that plateau after batch 200.
"Plateau" is made precise here:

* :func:`plateau_batch` — the smallest measured batch after which no larger measured batch raises throughput by
  more than ``min_gain`` (a fraction, default 10%) over the throughput at that batch. ``None`` when the last point
  is still gaining (no plateau inside the sweep).
* :func:`batch_scaling_efficiency` — throughput gain over the smallest batch divided by the batch growth
  (1 = linear gains, as on RDU / IPU; → 0 on a plateau).
"""
from __future__ import annotations

import math
from collections.abc import Sequence


def _points(batches: Sequence[int], throughputs: Sequence[float]) -> tuple[tuple[int, ...], tuple[float, ...]]:
    b = tuple(batches)
    t = tuple(float(x) for x in throughputs)
    if len(b) != len(t):
        raise ValueError(f"{len(b)} batch sizes but {len(t)} throughputs; give one throughput per batch size")
    if not b:
        raise ValueError("no (batch, throughput) points; measure at least one batch size")
    for i, x in enumerate(b):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ValueError(f"batch size #{i} is {x!r}; batch sizes must be positive ints")
    if any(lo >= hi for lo, hi in zip(b, b[1:])):
        raise ValueError(f"batch sizes {b} must be strictly increasing; sort the sweep")
    for i, x in enumerate(t):
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"throughput #{i} (batch {b[i]}) is {x!r}; throughputs must be finite and > 0")
    return b, t


def plateau_batch(batches: Sequence[int], throughputs: Sequence[float], *, min_gain: float = 0.10) -> int | None:
    """The smallest batch ``b_i`` with ``max(T_j for j > i) <= (1 + min_gain) * T_i``; ``None`` if only the last
    point qualifies (the sweep never saw gains flatten). Scale-invariant in throughput."""
    if not (math.isfinite(min_gain) and min_gain >= 0):
        raise ValueError(f"min_gain={min_gain!r} must be a finite fraction >= 0, e.g. 0.10 for 10%")
    b, t = _points(batches, throughputs)
    for i in range(len(b) - 1):
        if max(t[i + 1:]) <= (1.0 + min_gain) * t[i]:
            return b[i]
    return None


def batch_scaling_efficiency(batches: Sequence[int], throughputs: Sequence[float]) -> tuple[float, ...]:
    """Per point: ``(T_i / T_0) / (b_i / b_0)`` — 1 for linear gains, below 1 as gains flatten."""
    b, t = _points(batches, throughputs)
    return tuple((ti / t[0]) / (bi / b[0]) for bi, ti in zip(b, t))
