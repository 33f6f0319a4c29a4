"""What an experiment hands the recorder (``genai.record(result)``): its numbers, each with its source, unit, rounds
or interval, labels and attachments. No pytest, no torch here, so experiment packages and their workers import it."""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from pytest_genai.stats import Interval


def rounds_of(values: Iterable[float]) -> tuple[float, ...] | None:
    """Every round's value, or None for fewer than two: one value has no spread, so the gate compares it as a point."""
    out = tuple(float(v) for v in values)
    return out if len(out) >= 2 else None


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One number of an experiment's result, with what :meth:`GenaiRecorder.metric` records beside it."""

    value: float
    source: str | None = None  # measured / modeled / spec / config; None: the registry's, else from the name
    unit: str | None = None
    rounds: tuple[float, ...] | None = None  # every interleaved round's value (its median interval is recorded)
    interval: Interval | tuple[float, float] | None = None  # a Record's: the recorded (lo, hi)


@dataclasses.dataclass(frozen=True)
class Result:
    """What an experiment returns for recording: metrics (numbers or :class:`Measurement`), labels, attachments."""

    metrics: Mapping[str, Any]
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    attachments: Mapping[str, Any] = dataclasses.field(default_factory=dict)
