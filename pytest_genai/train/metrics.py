"""Fine-tuning throughput metrics (Paper A, A2). Pure functions: floats in, floats out.

Definitions:

- a step's time is the slowest rank's time for that step (every rank waits for it at the next collective;
  :func:`pytest_genai.runtime.timing.slowest_rank_steps`); the reported step time is the median over the steps
  after warm-up;
- throughput is global: every rank's tokens (samples) of a step divided by the step time;
- achieved FLOP/s is the analytic training FLOPs of a step (``flops.training_flops_per_step``) over the step
  time; MFU (model FLOPs utilization, PaLM, Chowdhery et al. 2022, appendix B) divides it by the peak of
  the devices used;
- speedups and ratios divide a throughput by another (> 1: the numerator is faster).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def _positive(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} must be a positive finite number")
    return float(value)


def median_step_s(step_s: Sequence[float], warmup: int) -> float:
    """Median step time after dropping the first ``warmup`` steps."""
    if warmup < 0:
        raise ValueError(f"warmup={warmup} must be >= 0")
    timed = list(step_s)[warmup:]
    if not timed:
        raise ValueError(f"no timed steps: {len(step_s)} steps with warmup={warmup}; run more steps")
    for t in timed:
        _positive("step time", t)
    return float(statistics.median(timed))


def tokens_per_s(global_batch: int, seq_len: int, step_s: float) -> float:
    """Global training throughput in tokens per second: ``global_batch · seq_len / step_s``."""
    return _positive("global_batch", global_batch) * _positive("seq_len", seq_len) / _positive("step_s", step_s)


def samples_per_s(global_batch: int, step_s: float) -> float:
    """Global training throughput in sequences per second: ``global_batch / step_s``."""
    return _positive("global_batch", global_batch) / _positive("step_s", step_s)


def achieved_tflops(flops_per_step: float, step_s: float) -> float:
    """Achieved TFLOP/s of the whole job: analytic FLOPs per step / step time / 1e12."""
    return _positive("flops_per_step", flops_per_step) / _positive("step_s", step_s) / 1e12


def mfu(achieved: float, peak_tflops_per_device: float, devices: int) -> float:
    """Model FLOPs utilization: achieved TFLOP/s / (peak TFLOP/s of one device × devices used)."""
    if not isinstance(devices, int) or devices <= 0:
        raise ValueError(f"devices={devices!r} must be a positive int")
    if achieved < 0 or not math.isfinite(achieved):
        raise ValueError(f"achieved={achieved!r} must be a finite number >= 0")
    return achieved / (_positive("peak_tflops_per_device", peak_tflops_per_device) * devices)


def speedup(faster_candidate: float, baseline: float) -> float:
    """Throughput ratio ``faster_candidate / baseline`` (> 1 when the candidate is faster)."""
    return _positive("faster_candidate", faster_candidate) / _positive("baseline", baseline)


def loss_drop(loss_start: float, loss_end: float) -> float:
    """Relative fall of the training loss, ``(start - end) / start`` (> 0 when it falls)."""
    return (_positive("loss_start", loss_start) - loss_end) / loss_start
