"""Metric directions and units for comparison, from a registry passed in (``claims.default_metric_info``'s)."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .runs import BENCH_STATS_FIELDS, bench_stat_metric

DIRECTIONS = ("higher", "lower", "none")

#: Throughput metrics, in order of preference (plots, and a generation claim's ``speedup``).
THROUGHPUT_METRICS = ("tokens_per_s", "samples_per_s", "images_per_s", "achieved_tflops")
#: Quality metrics, in order of preference for a benchmark's main metric.
QUALITY_METRICS = ("perplexity", "word_perplexity", "acc_norm", "acc", "bits_per_byte", "ppl_ratio")
SPEEDUP_METRIC = "speedup"  # two-run: newer generation's throughput over the older one's


@dataclass(frozen=True)
class MetricInfo:
    """What the report needs to know about a metric; the fields mean what ``claims.model.MetricDef``'s do."""

    name: str
    unit: str
    direction: str
    timing: bool = False
    max_regression: float | None = None
    machine_normalized: bool = False
    measured_inputs: bool = False
    numerator: str | None = None
    optional: bool = False
    contention_free: bool = False

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name!r}: direction {self.direction!r} is not one of "
                             f"{', '.join(DIRECTIONS)}; fix the metric's registry entry")


# pytest-benchmark's round-time statistics, for thresholds such as ``mean:5%``
BUILTIN_METRICS: Mapping[str, MetricInfo] = MappingProxyType(
    {bench_stat_metric(f): MetricInfo(bench_stat_metric(f), "s", "lower", timing=True) for f in BENCH_STATS_FIELDS})
_FLAGS = ("timing", "machine_normalized", "measured_inputs", "optional", "contention_free")

#: Units the gate converts between; any other unit is compared only with itself.
UNIT_SCALES: Mapping[str, tuple[str, float]] = MappingProxyType({
    # unit -> (dimension, size in that dimension's base unit); definitions (SI prefixes, IEC binary prefixes), exact
    "s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6), "µs": ("time", 1e-6), "ns": ("time", 1e-9),
    "min": ("time", 60.0), "h": ("time", 3600.0),
    "B": ("bytes", 1.0), "kB": ("bytes", 1e3), "KB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12), "KiB": ("bytes", 2.0**10), "MiB": ("bytes", 2.0**20), "GiB": ("bytes", 2.0**30),
    "TiB": ("bytes", 2.0**40),
    "B/s": ("bandwidth", 1.0), "MB/s": ("bandwidth", 1e6), "GB/s": ("bandwidth", 1e9), "TB/s": ("bandwidth", 1e12),
    "FLOP/s": ("flop rate", 1.0), "GFLOP/s": ("flop rate", 1e9), "TFLOP/s": ("flop rate", 1e12),
    "PFLOP/s": ("flop rate", 1e15),
    "FLOP": ("flop", 1.0), "GFLOP": ("flop", 1e9), "TFLOP": ("flop", 1e12), "PFLOP": ("flop", 1e15),
    "1": ("ratio", 1.0), "%": ("ratio", 1e-2), "x": ("factor", 1.0),
})


def unit_factor(from_unit: str, to_unit: str) -> float | None:
    """The factor that turns a value in ``from_unit`` into ``to_unit``, or None when no conversion is known."""
    if from_unit == to_unit:
        return 1.0
    a, b = UNIT_SCALES.get(from_unit.strip()), UNIT_SCALES.get(to_unit.strip())
    if a is None or b is None or a[0] != b[0]:
        return None
    return a[1] / b[1]


def metric_info_from(registry: Mapping[str, Any]) -> dict[str, MetricInfo]:
    """Adapt a registry mapping (name → MetricDef-like object or dict) to :class:`MetricInfo`, plus built-ins."""
    out: dict[str, MetricInfo] = dict(BUILTIN_METRICS)
    for name, definition in registry.items():
        if isinstance(definition, MetricInfo):
            out[name] = definition
            continue
        get = definition.get if isinstance(definition, Mapping) else lambda k, d=None: getattr(definition, k, d)
        limit = get("max_regression", None)
        out[name] = MetricInfo(name=str(name), unit=str(get("unit", "") or ""), direction=str(get("direction", "none")),
                               max_regression=None if limit is None else float(limit),
                               numerator=get("numerator", None) or None, **{f: bool(get(f, False)) for f in _FLAGS})
    return out
