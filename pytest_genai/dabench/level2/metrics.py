"""Scaling metrics of Paper B, B2. Pure functions: floats in, floats out.

* ``scaling_throughput_ratio`` — throughput on the larger chip count / throughput on the smaller (the paper's
  "2 → 4 chips loses 40%" is a ratio of 0.6 with twice the chips).
* ``scaling_efficiency`` — that ratio divided by the chip-count ratio (1 = perfect linear scaling).
* ``time_share`` — a part of a step's wall time (communication) as a fraction of the step.
* ``mixed_precision_speedup`` — throughput with mixed precision / throughput in full precision.
"""
from __future__ import annotations

import math


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive finite number")
    return float(value)


def scaling_throughput_ratio(throughput_large: float, throughput_small: float) -> float:
    """``throughput_large / throughput_small`` (Paper B, B2): > 1 when more chips are faster."""
    return _positive("throughput_large", throughput_large) / _positive("throughput_small", throughput_small)


def scaling_efficiency(throughput_large: float, throughput_small: float, chips_large: int, chips_small: int = 1) -> float:
    """Throughput ratio over chip ratio: ``(T_large / T_small) / (n_large / n_small)``; 1 = linear scaling."""
    for name, v in (("chips_large", chips_large), ("chips_small", chips_small)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    if chips_large <= chips_small:
        raise ValueError(f"chips_large={chips_large} must exceed chips_small={chips_small}")
    return scaling_throughput_ratio(throughput_large, throughput_small) * chips_small / chips_large


def time_share(part_s: float, total_s: float) -> float:
    """``part_s / total_s`` clipped to [0, 1] (a part measured separately may exceed the total by clock jitter)."""
    if not math.isfinite(part_s) or part_s < 0:
        raise ValueError(f"part_s={part_s!r} must be finite and >= 0")
    return min(1.0, float(part_s) / _positive("total_s", total_s))


def mixed_precision_speedup(throughput_mixed: float, throughput_full: float) -> float:
    """``throughput_mixed / throughput_full`` (Paper B, B2: +34.3% on RDU is 1.343)."""
    return _positive("throughput_mixed", throughput_mixed) / _positive("throughput_full", throughput_full)
