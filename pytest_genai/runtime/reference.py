"""A fixed reference kernel timed beside a step, so that a comparison of two runs can tell the machine's speed from the
code's.

On a shared or virtual CPU the same step's time drifts by a third between runs minutes apart, with no CPU stall the
guest can see (other tenants of the host, its shared caches and memory), and a CPU-heavy job beside it slows the
step's execution itself, not only its time slices. Both slow any code on that core. A small fixed mix of the same
kinds of op a decoder step runs (layer norm, matmuls, softmax, GELU), timed back to back with each step, sees the
same spells; the step's time over the reference's, per round, is then a property of the step on that kind of CPU, and
a change of the step's own code moves it while a slower machine does not (much).

It is not a hardware comparison: a faster CPU speeds up both. And a change that slows the reference's own ops (a torch
upgrade that slows softmax) slows both too, which the gate reports as inconclusive, not unchanged
(:mod:`pytest_genai.report.compare`). :data:`REFERENCE_ID` names this kernel in every run that records it; a
different kernel is a different ruler, and runs measured with different ones are not compared on it.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

REFERENCE_ID = "torch-cpu-mix-v1"
"""The kernel below, by version: bump it whenever its ops, shapes or repeats change."""

REFERENCE_LABEL = "reference_kernel"
"""The label a benchmark records :data:`REFERENCE_ID` under, beside a metric measured against the kernel."""

_TOKENS, _WIDTH, _REPEATS = 96, 80, 3


def reference_kernel() -> Callable[[], None]:
    """The reference: a seeded, fixed-shape op mix on the CPU (under a millisecond), in inference mode.

    Fixed: its inputs, shapes and ops never depend on the benchmark, so it measures the machine, not the workload.
    """
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(_TOKENS, _WIDTH, generator=gen)
    w1 = torch.randn(_WIDTH, _WIDTH, generator=gen) / _WIDTH**0.5
    w2 = torch.randn(_WIDTH, _WIDTH, generator=gen) / _WIDTH**0.5

    def run() -> None:
        with torch.inference_mode():
            for _ in range(_REPEATS):
                h = F.layer_norm(x, (_WIDTH,)) @ w1
                s = torch.softmax(h @ h.T, dim=-1) @ h
                F.gelu(s @ w2)

    return run


def step_over_reference(step: Callable[[], Any], reference: Callable[[], Any], steps: int, *,
                        clock: Callable[[], float] = time.perf_counter) -> tuple[float, float, float]:
    """One round: ``steps`` pairs of the reference then the step, each timed on its own, back to back so that both
    see the same spell of the machine. Returns ``(step median s, reference median s, their ratio)``.

    Medians, not means: a pair that lost its core to another task for part of it is an outlier on one side. (Sizing
    the reference block to the step's length did not help the gate decide more cases.)
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    step_s, ref_s = [], []
    for _ in range(steps):
        t0 = clock()
        reference()
        t1 = clock()
        step()
        t2 = clock()
        ref_s.append(t1 - t0)
        step_s.append(t2 - t1)
    s, r = statistics.median(step_s), statistics.median(ref_s)
    if r <= 0:
        raise ValueError(f"the reference kernel took {r} s: the clock cannot time it")
    return s, r, s / r
