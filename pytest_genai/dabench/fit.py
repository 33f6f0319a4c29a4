"""Does a stack of n layers run on the device? One probe of the capacity search, freeing everything afterwards.

A probe builds the stack and runs two steps (the second one with the optimizer state in place, the steady state the
memory model describes). Out of memory is caught and the probe answers False:

* CPU: under a :mod:`~pytest_genai.runtime.memtrack` tracker whose budget (``--genai-memory-budget``) stands in for
  the device's capacity, so a shared machine is never exhausted.
* CUDA: ``torch.cuda.OutOfMemoryError`` from the real allocator; with a budget, also a peak
  (``max_memory_allocated``) above it.

Every probe drops its tensors and collects garbage (and empties the CUDA cache) before returning.
"""
from __future__ import annotations

import dataclasses
import gc
from typing import Any

from pytest_genai.dabench.config import DecoderConfig


@dataclasses.dataclass(frozen=True)
class Probe:
    layers: int
    ok: bool
    peak_bytes: int | None  # measured high-water mark of tensor bytes (None when the probe failed before a step)


def _run_two_steps(cfg: DecoderConfig, torch_device: Any) -> None:
    from pytest_genai.dabench import model

    stack = model.build_stack(cfg, torch_device)
    x = model.make_input(cfg, torch_device)
    step = model.make_step(cfg, stack, x)
    step()
    step()


def probe(cfg: DecoderConfig, layers: int, device: Any, budget_bytes: int | None) -> Probe:
    """Run ``cfg`` with ``layers`` layers on ``device``; ``ok`` is False on out-of-memory (or over budget)."""
    cfg = dataclasses.replace(cfg, layers=layers)
    if device.kind == "cpu":
        return _probe_cpu(cfg, device, budget_bytes)
    if device.kind == "cuda":
        return _probe_cuda(cfg, device, budget_bytes)
    raise ValueError(f"no capacity probe for device kind {device.kind!r}; use cpu or cuda")


def _probe_cpu(cfg: DecoderConfig, device: Any, budget_bytes: int | None) -> Probe:
    from pytest_genai.runtime.memtrack import MemoryBudgetExceeded, make_tracker

    if budget_bytes is None:
        raise ValueError("the CPU capacity probe needs a memory budget (--genai-memory-budget, e.g. 256MiB)")
    tracker = make_tracker(budget_bytes)
    ok = True
    try:
        with tracker:
            _run_two_steps(cfg, device.torch_device)
    except MemoryBudgetExceeded:
        ok = False
    except RuntimeError:
        # autograd may wrap an exception raised inside backward; the tracker knows whether it was the budget.
        if not tracker.exceeded:
            raise
        ok = False
    finally:
        gc.collect()
    return Probe(cfg.layers, ok, tracker.peak_bytes if ok else None)


def _probe_cuda(cfg: DecoderConfig, device: Any, budget_bytes: int | None) -> Probe:
    import torch

    ok, peak = True, None
    try:
        device.synchronize()
        torch.cuda.empty_cache()
        device.reset_peak_memory()
        _run_two_steps(cfg, device.torch_device)
        device.synchronize()
        peak = device.peak_memory_bytes()
        if budget_bytes is not None and peak is not None and peak > budget_bytes:
            ok = False
    except torch.cuda.OutOfMemoryError:
        ok, peak = False, None
    finally:
        gc.collect()
        torch.cuda.empty_cache()
    return Probe(cfg.layers, ok, peak)
