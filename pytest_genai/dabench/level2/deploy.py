"""Deployment sweeps on one device (Paper B, B2): throughput against batch size, and against numeric precision.

Both run Level 1's decoder stack in-process (:func:`pytest_genai.dabench.model.build_stack`) and time its step
with Level 1's synchronized, warmed-up, interleaved timer (:func:`pytest_genai.runtime.timing.time_each`: the
variants are timed round by round, so a slow spell of a shared machine hits all of them alike); the median of each
variant is its step time.

* :func:`batch_sweep` — samples/s at each batch (each timed sample runs enough steps to cover the largest batch's
  samples); the plateau batch (:func:`pytest_genai.dabench.level2.knee.plateau_batch`) is computed from those points.
* :func:`precision_sweep` — fp32 against a mixed (``torch.autocast``; parameters and optimizer stay fp32) or pure
  low-precision step of the same stack; the speedup is fp32 step time / low-precision step time. The relative
  output difference from fp32 is reported too: it shows the low precision was really used.

torch is imported inside functions.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2 import knee, metrics
from pytest_genai.dabench.level2.config import PRECISION_DTYPES, BatchSweepConfig, PrecisionConfig


@dataclasses.dataclass(frozen=True)
class BatchSweepResult:
    batches: tuple[int, ...]
    step_s: tuple[float, ...]
    min_gain: float
    step_rounds: tuple[tuple[float, ...], ...] = ()  # per batch, each interleaved round's step seconds

    @property
    def samples_per_s(self) -> tuple[float, ...]:
        return tuple(b / s for b, s in zip(self.batches, self.step_s))

    @property
    def plateau_batch(self) -> int | None:
        return knee.plateau_batch(self.batches, self.samples_per_s, min_gain=self.min_gain)

    @property
    def batch_scaling_efficiency(self) -> tuple[float, ...]:
        return knee.batch_scaling_efficiency(self.batches, self.samples_per_s)

    @property
    def throughput_gain(self) -> float:
        """Best measured samples/s over samples/s at the smallest batch."""
        return max(self.samples_per_s) / self.samples_per_s[0]

    @property
    def throughput_gain_rounds(self) -> list[float]:
        """Per round, samples/s at the best batch (by medians) over samples/s at the smallest batch."""
        best = max(range(len(self.batches)), key=lambda i: self.samples_per_s[i])
        return [s0 / sb * self.batches[best] / self.batches[0]
                for s0, sb in zip(self.step_rounds[0], self.step_rounds[best])]


@dataclasses.dataclass(frozen=True)
class PrecisionResult:
    precision: str
    fp32_step_s: float
    step_s: float
    output_rel_error: float
    speedup_rounds: tuple[float, ...] = ()  # per interleaved round: fp32 step / low-precision step
    fp32_step_rounds: tuple[float, ...] = ()  # per interleaved round: the fp32 step's seconds (fp32_step_s: median)
    step_rounds: tuple[float, ...] = ()  # per interleaved round: the low-precision step's seconds (step_s: median)

    @property
    def speedup(self) -> float:
        """fp32 step time / low-precision step time (= samples/s ratio, same batch)."""
        return metrics.mixed_precision_speedup(1.0 / self.step_s, 1.0 / self.fp32_step_s)


def _step(cfg: DecoderConfig, stack: Any, x: Any, autocast: tuple[str, Any] | None) -> Callable[[], None]:
    """A training (forward + backward + AdamW) or forward step, under ``autocast`` when given
    (:func:`pytest_genai.dabench.model.make_step`)."""
    from pytest_genai.dabench.model import make_step

    return make_step(cfg, stack, x, autocast)


def batch_sweep(cfg: BatchSweepConfig, device: Any) -> BatchSweepResult:
    """Measured step time at each batch of ``cfg.batches`` on ``device`` (a pytest_genai Device)."""
    from pytest_genai.dabench.model import build_stack, make_input
    from pytest_genai.runtime.timing import time_each

    tdev = device.torch_device
    stack = build_stack(cfg.workload, tdev)
    top = cfg.batches[-1]

    def same_samples(b: int) -> Callable[[], None]:
        # Every timed sample runs ceil(top / b) steps: each point covers about the same number of samples and wall
        # span, so a shared machine's interruptions hit small and large batches alike.
        step, calls = _step(cfg.at(b), stack, make_input(cfg.at(b), tdev), None), -(-top // b)

        def run() -> None:
            for _ in range(calls):
                step()

        return run

    timings = time_each([same_samples(b) for b in cfg.batches], sync=device.synchronize, warmup=cfg.warmup,
                        repeats=cfg.repeats)
    step_s = tuple(t.median_s / -(-top // b) for t, b in zip(timings, cfg.batches))
    rounds = tuple(tuple(x / -(-top // b) for x in t.samples) for t, b in zip(timings, cfg.batches))
    return BatchSweepResult(tuple(cfg.batches), step_s, float(cfg.min_gain), rounds)


def _output_rel_error(ref: Any, low: Any, x: Any, autocast: tuple[str, Any] | None) -> float:
    import torch

    with torch.no_grad():
        want = ref(x).float()
        if autocast is not None:
            with torch.autocast(device_type=autocast[0], dtype=autocast[1]):
                got = low(x).float()
        else:
            got = low(x.to(next(low.parameters()).dtype)).float()
    return float((got - want).abs().max() / want.abs().max())


def precision_sweep(cfg: PrecisionConfig, device: Any) -> PrecisionResult:
    """Interleaved fp32 and ``cfg.precision`` steps of the same stack (same seed) on ``device``."""
    from pytest_genai.dabench.model import build_stack, make_input, torch_dtype
    from pytest_genai.runtime.timing import time_each

    tdev = device.torch_device
    amp_dtype, param_dtype = PRECISION_DTYPES[cfg.precision]
    w = cfg.workload
    x = make_input(w, tdev)
    ref = build_stack(w, tdev)
    autocast = None if amp_dtype is None else (tdev.type, torch_dtype(amp_dtype))
    low_cfg = dataclasses.replace(w, dtype=param_dtype)
    low = build_stack(low_cfg, tdev)
    error = _output_rel_error(ref, low, x, autocast)
    steps = [_step(w, ref, x, None), _step(low_cfg, low, make_input(low_cfg, tdev), autocast)]
    fp32, other = time_each(steps, sync=device.synchronize, warmup=cfg.warmup, repeats=cfg.repeats)
    rounds = tuple(a / b for a, b in zip(fp32.samples, other.samples))
    return PrecisionResult(cfg.precision, fp32.median_s, other.median_s, error, rounds,
                           fp32_step_rounds=tuple(fp32.samples), step_rounds=tuple(other.samples))
