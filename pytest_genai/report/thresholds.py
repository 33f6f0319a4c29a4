"""Regression thresholds: ``metric=N%``, ``experiment:metric=N%``, ``experiment:*=N%``, ``*=N%`` or ``median:10%``."""

from __future__ import annotations

import difflib
import math
import re
import statistics
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Collection, Mapping, Sequence

from .run_noise import RunNoise
from pytest_genai.stats import median_interval
from pytest_genai.results.runs import BENCH_STATS_FIELDS, bench_stat_metric

DEFAULT_MAX_REGRESSION = 0.05  # allowed worsening for a metric nobody gave a threshold for
BUILTIN_DEFAULTS: Mapping[str, float] = MappingProxyType({"benchmark_median_s": 0.10})  # worth a gate on a shared CPU

_NAME = r"[A-Za-z0-9_.\-]+"
_KEY = re.compile(rf"^(?:(?P<exp>{_NAME}):)?(?P<metric>{_NAME}|\*)$")
_VALUE = re.compile(r"^(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%$")


class ThresholdError(ValueError):
    """A malformed thresholds text; the message names the bad token and the expected form."""


@dataclass(frozen=True)
class Thresholds:
    """Allowed relative worsening per metric, as fractions (0.05 = 5 %)."""

    per_metric: Mapping[str, float] = field(default_factory=dict)
    per_experiment: Mapping[tuple[str, str], float] = field(default_factory=dict)
    default: float | None = None
    run_noise: RunNoise = field(default_factory=RunNoise)  # how a run's log mean moves between launches of the code

    def __post_init__(self) -> None:
        items = list(self.per_metric.items()) + [(f"{e}:{m}", v) for (e, m), v in self.per_experiment.items()]
        items += [("*", self.default)] if self.default is not None else []
        for key, value in items:
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ThresholdError(f"threshold for {key!r} is {value!r}; use a finite, non-negative fraction")

    def for_metric(self, metric: str, experiment: str | None = None, registry: float | None = None) -> float:
        """The allowed worsening for ``metric`` in ``experiment``: the user's keys, else ``registry``, else defaults."""
        order = (self.per_experiment.get((experiment, metric)), self.per_metric.get(metric),
                 self.per_experiment.get((experiment, "*")), self.default, registry)
        return next((v for v in order if v is not None), BUILTIN_DEFAULTS.get(metric, DEFAULT_MAX_REGRESSION))

    def unknown_names(self, metrics: Collection[str], experiments: Collection[str]) -> list[tuple[str, str, str]]:
        """``(key, kind, name)`` for each user-given key naming a metric or experiment not in the given sets."""
        out = [(metric, "metric", metric) for metric in sorted(self.per_metric) if metric not in metrics]
        for exp, metric in sorted(self.per_experiment):
            out += [(f"{exp}:{metric}", "experiment", exp)] if exp not in experiments else []
            out += [(f"{exp}:{metric}", "metric", metric)] if metric != "*" and metric not in metrics else []
        return out

    def check_known(self, metrics: Collection[str], experiments: Collection[str], *,
                    option: str = "--max-regression") -> None:
        """Raise :class:`ThresholdError` (one line) when a key names an unknown metric or experiment."""
        unknown = self.unknown_names(metrics, experiments)
        if not unknown:
            return
        parts = []
        for key, kind, name in unknown:
            close = difflib.get_close_matches(name, sorted(metrics if kind == "metric" else experiments), n=1)
            parts.append(f"unknown {kind} {name!r} in {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        known_metrics, known_experiments = (", ".join(sorted(names)) or "none" for names in (metrics, experiments))
        raise ThresholdError(
            f"{option}: {'; '.join(parts)} — known metrics: {known_metrics}; known experiments: {known_experiments}")

    def timing_fields(self) -> dict[str, str]:
        """The pytest-benchmark statistics the user gave a threshold for: ``{"benchmark_mean_s": "mean"}``."""
        named = set(self.per_metric) | {m for _, m in self.per_experiment}
        return {bench_stat_metric(f): f for f in BENCH_STATS_FIELDS if bench_stat_metric(f) in named}

    @property
    def id(self) -> str:
        """Canonical text of the user-given thresholds (parseable by :func:`parse_thresholds`)."""
        parts = [f"{m}={v * 100:g}%" for m, v in sorted(self.per_metric.items())]
        parts += [f"{e}:{m}={v * 100:g}%" for (e, m), v in sorted(self.per_experiment.items())]
        parts += [f"*={self.default * 100:g}%"] if self.default is not None else []
        return ",".join(parts) or "defaults"


def parse_thresholds(text: str | None, *, option: str = "--max-regression") -> Thresholds:
    """Parse ``"tokens_per_s=5%,quant:perplexity=0.5%,*=10%"``; errors name the bad token and ``option``."""
    if text is None or not text.strip():
        return Thresholds()
    given: dict[tuple[str | None, str], float] = {}  # (experiment or None, metric or "*") -> fraction
    for token in (raw.strip() for raw in text.split(",")):
        if not token:
            raise ThresholdError(f"{option}: empty token in {text!r}; separate KEY=N% entries with single commas")
        key, eq, value = (part.strip() for part in token.partition("="))
        if not eq:  # pytest-benchmark's --benchmark-compare-fail spelling, field:N% (a statistic: its metric)
            key, colon, value = (part.strip() for part in token.rpartition(":"))
            if not (colon and _VALUE.match(value) and re.fullmatch(_NAME, key)):
                raise ThresholdError(f"{option}: bad token {token!r}: expected KEY=N% or field:N% (pytest-benchmark's "
                                     "form), e.g. tokens_per_s=5% or median:10%")
            key = bench_stat_metric(key) if key in BENCH_STATS_FIELDS else key
        match, vmatch = _KEY.match(key), _VALUE.match(value)
        if not match:
            raise ThresholdError(f"{option}: bad token {token!r}: {key!r} is not a metric name, experiment:metric, "
                                 "experiment:* or *")
        if not vmatch:
            hint = f"{key}={value}%" if re.fullmatch(r"[0-9]*\.?[0-9]+", value) else f"{key}=5%"
            raise ThresholdError(f"{option}: bad token {token!r}: thresholds are percentages, e.g. {hint!r}")
        fraction = float(vmatch.group("num")) / 100.0
        if not math.isfinite(fraction):
            raise ThresholdError(f"{option}: bad token {token!r}: the percentage must be finite")
        slot = (match.group("exp"), match.group("metric"))
        if slot in given:
            raise ThresholdError(f"{option}: bad token {token!r}: {key!r} is given twice")
        given[slot] = fraction
    default = given.pop((None, "*"), None)
    return Thresholds(per_metric={m: v for (e, m), v in given.items() if e is None},
                      per_experiment={(e, m): v for (e, m), v in given.items() if e is not None}, default=default)


def precise_for_gate(rounds: Sequence[float], limit: float) -> bool:
    """Is the median's interval of ``rounds`` no wider than half ``limit`` (a gate can then decide 1.4x past it)?"""
    values = [float(r) for r in rounds]
    if len(values) < 2:
        return False
    interval = median_interval(values)
    return interval.hi - interval.lo <= limit / 2 * abs(statistics.median(values))
