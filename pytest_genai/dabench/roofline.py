"""The roofline model (Williams, Waterman, Patterson, 2009) as used by DABench-LLM (Paper B, B1).

Attainable performance at arithmetic intensity I (FLOP/byte) on a device with compute ceiling P (FLOP/s) and
memory ceiling B (byte/s) is ``min(P, I * B)``; the ridge point is ``P / B``
(:func:`pytest_genai.devices.specs.ridge_point`); a workload whose intensity lies at or
right of the ridge is compute-bound, left of it memory-bound; efficiency is achieved / attainable at I.
All functions are pure and take base units (FLOP, byte, second); :class:`Ceilings` holds TFLOP/s and GB/s.
"""
from __future__ import annotations

import dataclasses
import math

from pytest_genai.devices.specs import ridge_point

BOUNDS = ("compute", "memory")


def _positive(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOP per byte moved. ``bytes_moved`` must be positive; ``flops`` may be zero."""
    if not (math.isfinite(flops) and flops >= 0):
        raise ValueError(f"flops must be a finite number >= 0, got {flops!r}")
    return float(flops) / _positive("bytes_moved", bytes_moved)


def attainable_flops_per_s(intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """``min(peak FLOP/s, intensity x peak bytes/s)``."""
    if not (math.isfinite(intensity) and intensity >= 0):
        raise ValueError(f"intensity must be a finite number >= 0, got {intensity!r}")
    return min(_positive("peak_flops_per_s", peak_flops_per_s), intensity * _positive("peak_bytes_per_s", peak_bytes_per_s))


def classify_bound(intensity: float, ridge: float) -> str:
    """``"compute"`` at or right of the ridge point, ``"memory"`` left of it."""
    if not (math.isfinite(intensity) and intensity >= 0):
        raise ValueError(f"intensity must be a finite number >= 0, got {intensity!r}")
    return "compute" if intensity >= _positive("ridge", ridge) else "memory"


def efficiency(achieved_flops_per_s: float, intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """Achieved FLOP/s over the attainable FLOP/s at the workload's intensity (1 = on the roof)."""
    if not (math.isfinite(achieved_flops_per_s) and achieved_flops_per_s >= 0):
        raise ValueError(f"achieved_flops_per_s must be a finite number >= 0, got {achieved_flops_per_s!r}")
    roof = attainable_flops_per_s(intensity, peak_flops_per_s, peak_bytes_per_s)
    if roof == 0:
        raise ValueError("attainable performance is 0 at intensity 0; efficiency is undefined (use bandwidth efficiency)")
    return achieved_flops_per_s / roof


@dataclasses.dataclass(frozen=True)
class Ceilings:
    """A device's compute and memory ceilings for one dtype, and where they came from."""

    tflops: float
    gbs: float
    source: str  # "measured" or "spec"

    def __post_init__(self) -> None:
        _positive("Ceilings.tflops", self.tflops)
        _positive("Ceilings.gbs", self.gbs)
        if self.source not in ("measured", "spec"):
            raise ValueError(f"Ceilings.source must be 'measured' or 'spec', got {self.source!r}")

    @property
    def flops_per_s(self) -> float:
        return self.tflops * 1e12

    @property
    def bytes_per_s(self) -> float:
        return self.gbs * 1e9

    @property
    def ridge(self) -> float:
        return ridge_point(self.flops_per_s, self.bytes_per_s)


@dataclasses.dataclass(frozen=True)
class RooflinePoint:
    """A measured workload on a device's roofline."""

    flops: float
    bytes_moved: float
    seconds: float
    ceilings: Ceilings

    def __post_init__(self) -> None:
        _positive("RooflinePoint.seconds", self.seconds)
        _positive("RooflinePoint.bytes_moved", self.bytes_moved)

    @property
    def intensity(self) -> float:
        return arithmetic_intensity(self.flops, self.bytes_moved)

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes_moved / self.seconds

    @property
    def bound(self) -> str:
        return classify_bound(self.intensity, self.ceilings.ridge)

    @property
    def efficiency(self) -> float:
        """Achieved / attainable at this intensity; for zero-FLOP work, achieved bytes/s over the memory roof."""
        if self.flops == 0:
            return self.achieved_bytes_per_s / self.ceilings.bytes_per_s
        return efficiency(self.achieved_flops_per_s, self.intensity, self.ceilings.flops_per_s, self.ceilings.bytes_per_s)
