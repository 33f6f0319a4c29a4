"""Roofline geometry for plots (Williams, Waterman & Patterson 2009) in TFLOP/s, GB/s (1e9 bytes/s) and FLOP/byte."""

from __future__ import annotations

from pytest_genai.devices.specs import ridge_point


def attainable_tflops(intensity: float, peak_tflops: float, bandwidth_gbs: float) -> float:
    """``min(peak, bandwidth * intensity)`` in TFLOP/s."""
    return min(peak_tflops, bandwidth_gbs * 1e9 * intensity / 1e12)


def ceiling_polyline(peak_tflops: float, bandwidth_gbs: float, x_min: float,
                     x_max: float) -> tuple[list[float], list[float]]:
    """Vertices of the roof between ``x_min`` and ``x_max``, including the ridge itself when it lies inside."""
    ridge = ridge_point(peak_tflops * 1e12, bandwidth_gbs * 1e9)
    xs = [x_min] + ([ridge] if x_min < ridge < x_max else []) + [x_max]
    return xs, [attainable_tflops(x, peak_tflops, bandwidth_gbs) for x in xs]
