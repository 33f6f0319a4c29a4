"""Metric directions and units for comparison, read from the suite's metric registry.

The registry (``pytest_genai.claims.load_metrics()``) maps metric names to definitions
with ``unit`` and ``direction`` ("higher", "lower" or "none").  Everything in this
package takes the registry as an explicit argument (a mapping of name → object with
those attributes, or → dict); :func:`default_metric_info` loads the suite's one.
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

SPEEDUP_METRIC = "speedup"
"""The registry's two-run metric: throughput of the newer generation / throughput of the older one."""


@dataclass(frozen=True)
class MetricInfo:
    """What the report needs to know about a metric: its unit and which way is better."""

    name: str
    unit: str
    direction: str

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
        bench_stat_metric(f): MetricInfo(bench_stat_metric(f), "s", "lower") for f in BENCH_STATS_FIELDS
    }
)


def metric_info_from(registry: Mapping[str, Any]) -> dict[str, MetricInfo]:
    """Adapt a registry mapping (name → MetricDef-like object or dict) to :class:`MetricInfo`, plus built-ins."""
    out: dict[str, MetricInfo] = dict(BUILTIN_METRICS)
    for name, definition in registry.items():
        if isinstance(definition, MetricInfo):
            out[name] = definition
            continue
        get = definition.get if isinstance(definition, Mapping) else lambda k, d=None: getattr(definition, k, d)
        out[name] = MetricInfo(name=str(name), unit=str(get("unit", "") or ""), direction=str(get("direction", "none")))
    return out


def default_metric_info() -> tuple[dict[str, MetricInfo], str | None]:
    """The suite's registry as :class:`MetricInfo`, and a warning when it could not be loaded.

    A registry that cannot be loaded leaves only the built-in metrics; every other metric
    is then shown without a direction and never gated (the warning says so).
    """
    try:
        from pytest_genai.claims import load_metrics
    except ImportError as exc:
        return dict(BUILTIN_METRICS), f"metric registry unavailable ({exc}); metric directions unknown, nothing gated"
    try:
        registry = load_metrics()
    except Exception as exc:  # a malformed registry file: report it, do not crash the command
        return dict(BUILTIN_METRICS), f"metric registry could not be loaded: {exc}"
    return metric_info_from(registry), None
