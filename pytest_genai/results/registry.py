"""Metric directions and units for comparison, read from the suite's metric registry.

The registry (``pytest_genai.claims.load_metrics()``) maps metric names to definitions
with ``unit`` and ``direction`` ("higher", "lower" or "none").  Everything in this
package takes the registry as an explicit argument (a mapping of name → object with
those attributes, or → dict); :func:`pytest_genai.claims.default_metric_info` loads the suite's one.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .runs import BENCH_STATS_FIELDS, bench_stat_metric

DIRECTIONS = ("higher", "lower", "none")

THROUGHPUT_METRICS = ("tokens_per_s", "samples_per_s", "images_per_s", "achieved_tflops")
"""Higher-is-better throughput metrics, in order of preference: drawn on sweep and strategy plots, and the
basis of a generation claim's two-run ``speedup``."""

QUALITY_METRICS = ("perplexity", "word_perplexity", "acc_norm", "acc", "bits_per_byte", "ppl_ratio")
"""Quality metrics, in order of preference for a benchmark's main metric: drawn on accuracy-vs-compression plots."""

SPEEDUP_METRIC = "speedup"
"""The registry's two-run metric: throughput of the newer generation / throughput of the older one."""


@dataclass(frozen=True)
class MetricInfo:
    """What the report needs to know about a metric: its unit, which way is better, whether it is derived from
    measured times (``timing``) and the gate's threshold the registry gives it (``max_regression``, a fraction: the
    quality threshold of a deterministic quality metric such as a perplexity or an accuracy), and whether it is a
    step's time over a reference kernel timed beside it (``machine_normalized``:
    :mod:`pytest_genai.runtime.reference`): between runs on one device, a raw speed regression counts only where it
    agrees. ``measured_inputs``: a modeled number computed from measured times, which the gate never compares as
    exact. ``numerator``: the metric this one is over a peak (MFU over ``achieved_tflops``); its regression counts
    only where the numerator's agrees, because a peak each session measures moves it on its own."""

    name: str
    unit: str
    direction: str
    timing: bool = False
    max_regression: float | None = None
    machine_normalized: bool = False
    measured_inputs: bool = False
    numerator: str | None = None
    optional: bool = False
    """Recorded only where the machine can measure it (energy): missing on one side is listed, never failed."""
    contention_free: bool = False
    """A statistic CPU contention does not move (an instruction count): the pressure rule does not hold it back."""

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"metric {self.name!r}: direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}; "
                "fix the metric's registry entry"
            )


BUILTIN_METRICS: Mapping[str, MetricInfo] = MappingProxyType(
    {
        # pytest-benchmark's round times: the median is exposed by runs.py for every benchmark, the other
        # statistics when a threshold names them (``mean:5%``, pytest-benchmark's --benchmark-compare-fail form).
        bench_stat_metric(f): MetricInfo(bench_stat_metric(f), "s", "lower", timing=True) for f in BENCH_STATS_FIELDS
    }
)

# --- units -----------------------------------------------------------------------------------------------------------

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
"""Units the gate can convert between: a value recorded in ``ms`` is compared with one in ``s`` after scaling, a unit
outside this table (or of another dimension) is never compared with a different one."""


def unit_factor(from_unit: str, to_unit: str) -> float | None:
    """The factor that turns a value in ``from_unit`` into ``to_unit`` (1.0 for the same text), or None when the two
    are not both in :data:`UNIT_SCALES` with one dimension (no conversion is known: the values cannot be compared)."""
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
                               timing=bool(get("timing", False)),
                               max_regression=None if limit is None else float(limit),
                               machine_normalized=bool(get("machine_normalized", False)),
                               measured_inputs=bool(get("measured_inputs", False)),
                               numerator=get("numerator", None) or None,
                               optional=bool(get("optional", False)),
                               contention_free=bool(get("contention_free", False)))
    return out
