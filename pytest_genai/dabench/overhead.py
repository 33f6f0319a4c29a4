"""What the DABench Level 1 timer costs: the same decoder-stack step through the timer and through a bare loop.

The timer path is what :func:`pytest_genai.dabench.level1.measure` runs by default (and the benchmark's fallback
under ``--benchmark-disable``): :func:`~pytest_genai.runtime.timing.time_callable` with the device's
synchronize, two clock reads and a stored sample around every step. The bare path is ``for _ in range(steps):
step()`` between two ``time.perf_counter()`` reads. Both run the same ``steps`` steps of the same stack and input,
in interleaved rounds with the order alternating (:func:`~pytest_genai.runtime.timing.paired_rounds`); each round's
throughput ratio (timer path over bare) is one value for the interval a timing claim is judged on (the harness-overhead target:
target >= 0.95).
"""
from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

from pytest_genai.dabench.config import DecoderConfig


def throughput_ratios(path_s: Sequence[float], bare_s: Sequence[float]) -> list[float]:
    """Per round, the path's throughput over the bare loop's for the same steps: ``bare seconds / path seconds``
    (1 when the path costs nothing, < 1 when it slows the work)."""
    if len(path_s) != len(bare_s) or not path_s:
        raise ValueError(f"need the same non-zero number of rounds on both sides, got {len(path_s)} and {len(bare_s)}")
    if min(path_s) <= 0 or min(bare_s) <= 0:
        raise ValueError("every round's seconds must be positive")
    return [b / p for p, b in zip(path_s, bare_s)]


@dataclasses.dataclass(frozen=True)
class PathVsBare:
    """Per round: seconds of ``steps`` steps through the timer path and through the bare loop, and the median step
    time the timer itself reported."""

    steps: int
    path_s: tuple[float, ...]
    bare_s: tuple[float, ...]
    reported_step_s: tuple[float, ...]

    @property
    def ratios(self) -> list[float]:
        return throughput_ratios(self.path_s, self.bare_s)

    @property
    def ratio(self) -> float:
        """Median over rounds of the per-round throughput ratio."""
        return statistics.median(self.ratios)

    @property
    def bare_step_s(self) -> float:
        """Median over rounds of the bare loop's mean step time."""
        return statistics.median(s / self.steps for s in self.bare_s)


def timer_path_vs_bare(cfg: DecoderConfig, device: Any, *, rounds: int = 12, steps: int = 8,
                       warmup: int = 2) -> PathVsBare:
    """Build the Level 1 stack of ``cfg`` on ``device``, warm it up, and time ``steps`` steps through the timer
    path and through a bare loop in ``rounds`` interleaved rounds (see the module's docstring)."""
    import time

    from pytest_genai.dabench import model
    from pytest_genai.runtime.timing import paired_rounds, time_callable

    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    torch_device = device.torch_device
    if torch_device is None:
        raise ValueError(f"device kind {device.kind!r} is not torch-addressable; the timer path needs torch")
    stack = model.build_stack(cfg, torch_device)
    step = model.make_step(cfg, stack, model.make_input(cfg, torch_device))
    for _ in range(warmup):
        step()
    device.synchronize()
    reported: list[float] = []

    def timer_path() -> None:
        reported.append(time_callable(step, sync=device.synchronize, warmup=0, repeats=steps).median_s)

    def bare() -> None:
        for _ in range(steps):
            step()
        device.synchronize()  # the bare loop's one synchronize: its clock must not stop before the work did

    path_s, bare_s = paired_rounds(timer_path, bare, rounds=rounds, clock=time.perf_counter)
    return PathVsBare(steps, path_s, bare_s, tuple(reported))
