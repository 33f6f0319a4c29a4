"""How much a run moves between launches of one code, per experiment (``run_noise`` of :func:`.decision.decide`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Mapping

from pytest_genai._toml import load_toml

MEASURED = "measured"


@dataclass(frozen=True)
class RunNoise:
    default: float = 0.0
    per_experiment: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    source: str = "none"  # measured (the shipped table), given, or none
    per_metric: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # a metric's own

    def for_experiment(self, experiment: str | None) -> float:
        return self.per_experiment.get(experiment or "", self.default)

    def for_metric(self, metric: str, experiment: str | None) -> float:
        return self.per_metric.get(metric, self.for_experiment(experiment))

    @property
    def label(self) -> str:
        if self.source == "none":
            return "run noise 0 (rounds alone)"
        parts = [f"{k} {v:g}" for table in (self.per_experiment, self.per_metric) for k, v in sorted(table.items())]
        return f"run noise ({self.source}): default {self.default:g}" + (f", {', '.join(parts)}" if parts else "")


def measured() -> RunNoise:
    """The shipped table, ``claims/data/run_noise.toml`` (its header says how it was measured)."""
    path = resources.files("pytest_genai.claims").joinpath("data", "run_noise.toml")
    data = load_toml(path.read_text(encoding="utf-8"), str(path))
    per, metrics = (MappingProxyType({name: float(entry["value"]) for name, entry in data.get(kind, {}).items()})
                    for kind in ("experiment", "metric"))
    return RunNoise(float(data["default"]["value"]), per, MEASURED, metrics)


def parse_run_noise(text: str | None, option: str = "--run-noise") -> RunNoise:
    """``measured`` (or nothing): the shipped table; ``0.05``: all; ``finetune=0.2,*=0.05``: per experiment."""
    if text is None or text.strip().lower() in ("", MEASURED):
        return measured()
    per: dict[str, float] = {}  # and the default, as "*", until the end
    for token in text.split(","):
        key, eq, value = token.strip().rpartition("=")
        key = key.strip() if eq else "*"
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and 0 <= number <= 2):
            raise ValueError(f"{option + ' ' if option else ''}{text!r}: {value.strip()!r} is not a standard deviation "
                             "of a log between 0 and 2; give e.g. 0.05, finetune=0.2,*=0.05, or measured")
        per[key] = number
    default = per.pop("*", 0.0)
    return RunNoise(default, MappingProxyType(per), "given") if per or default else RunNoise()
