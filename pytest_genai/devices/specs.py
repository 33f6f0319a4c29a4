"""Accelerator specifications as data (``data/specs.toml``), each with its source.

Peaks are dense (not sparse). A value that could not be sourced is ``None`` and its field is named in
``unknown``; the CPU's peaks are measured once per session (:mod:`pytest_genai.devices.cpu_probe`) and carry
``source == "measured"``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from importlib import resources
from typing import Any, Mapping

from pytest_genai._toml import load_toml

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")
_SPEC_FILE = "specs.toml"



def ridge_point(peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """The roofline ridge point in FLOP/byte (Williams, Waterman & Patterson 2009): the arithmetic intensity where
    the memory roof meets the compute roof, ``peak FLOP/s / peak byte/s``. Base units in (FLOP/s, byte/s): convert
    TFLOP/s with ``* 1e12`` and GB/s with ``* 1e9``. The one ridge-point function of the suite."""
    for name, value in (("peak_flops_per_s", peak_flops_per_s), ("peak_bytes_per_s", peak_bytes_per_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(peak_flops_per_s) / float(peak_bytes_per_s)

@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """One device generation's published (or measured) ceilings."""

    generation: str
    kind: str
    name: str
    source: str
    peak_tflops_by_dtype: Mapping[str, float] = dataclasses.field(default_factory=dict)
    mem_bandwidth_gbs: float | None = None
    mem_capacity_gb: float | None = None
    onchip_mem_mb: float | None = None
    compute_units: int | None = None
    compute_unit_name: str | None = None
    threads: int | None = None  # for a measured CPU spec: the threads the peaks were measured with
    unknown: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for dtype, value in self.peak_tflops_by_dtype.items():
            if dtype not in DTYPES:
                raise ValueError(
                    f"device spec {self.generation!r}: unknown dtype {dtype!r} in peak_tflops; use one of {DTYPES}"
                )
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"device spec {self.generation!r}: peak_tflops.{dtype} must be a positive number")

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak in TFLOP/s for ``dtype`` (one of :data:`DTYPES`), or None when unknown/unsupported."""
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; use one of {DTYPES}")
        value = self.peak_tflops_by_dtype.get(dtype)
        return None if value is None else float(value)

    @property
    def ridge_point(self) -> float | None:
        """FP32 roofline ridge point in FLOP/byte (peak FLOP/s over memory bandwidth), when both are known."""
        return self.ridge_point_for("fp32")

    def ridge_point_for(self, dtype: str) -> float | None:
        """:func:`ridge_point` of this device's ``dtype`` peak and memory bandwidth, when both are known."""
        peak = self.peak_tflops(dtype)
        if peak is None or not self.mem_bandwidth_gbs:
            return None
        return ridge_point(peak * 1e12, self.mem_bandwidth_gbs * 1e9)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["peak_tflops"] = dict(data.pop("peak_tflops_by_dtype"))
        data["unknown"] = list(self.unknown)
        data["unsupported"] = list(self.unsupported)
        return data


def _parse(entry: Mapping[str, Any], where: str) -> DeviceSpec:
    known = {f.name for f in dataclasses.fields(DeviceSpec)} | {"peak_tflops"}
    extra = set(entry) - known
    if extra:
        raise ValueError(f"{where}: unknown field(s) {sorted(extra)}; allowed: {sorted(known)}")
    for required in ("generation", "kind", "name", "source"):
        if not entry.get(required):
            raise ValueError(f"{where}: field {required!r} is required")
    fields = dict(entry)
    fields["peak_tflops_by_dtype"] = dict(fields.pop("peak_tflops", {}))
    fields["unknown"] = tuple(fields.get("unknown", ()))
    fields["unsupported"] = tuple(fields.get("unsupported", ()))
    return DeviceSpec(**fields)


@functools.lru_cache(maxsize=None)
def load_specs() -> dict[str, DeviceSpec]:
    """All published specs, keyed by generation."""
    text = resources.files("pytest_genai.devices").joinpath("data", _SPEC_FILE).read_text(encoding="utf-8")
    data = load_toml(text, _SPEC_FILE)
    specs: dict[str, DeviceSpec] = {}
    for i, entry in enumerate(data.get("device", [])):
        spec = _parse(entry, f"{_SPEC_FILE} [[device]] #{i + 1}")
        if spec.generation in specs:
            raise ValueError(f"{_SPEC_FILE}: generation {spec.generation!r} listed twice")
        specs[spec.generation] = spec
    return specs


def get_spec(generation: str) -> DeviceSpec:
    """The spec of ``generation`` (e.g. ``"h100-sxm"``); ValueError naming the known ones otherwise."""
    specs = load_specs()
    try:
        return specs[generation]
    except KeyError:
        raise ValueError(
            f"no device spec for generation {generation!r}; known generations: {', '.join(sorted(specs))} "
            f"(add one to pytest_genai/devices/data/{_SPEC_FILE} with its source)"
        ) from None
