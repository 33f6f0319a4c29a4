"""Pipeline parallelism of the Level 1 decoder stack: contiguous stages, activations passed with send / recv.

The layer list is the stack's decoder blocks plus, optionally, an LM head (LayerNorm + ``hidden x vocab``
projection) — the heavy last layer of a real LLM, which makes an equal-layer-count split unbalanced. Each rank
keeps the layers of its stage (``Partition.stage_layers[rank]``) and runs the GPipe schedule
(Huang et al., 2019): the forwards of all micro-batches, then their backwards, then one optimizer step. Stage ``s``
receives activations from ``s - 1`` and gradients from ``s + 1``; the last stage back-propagates a fixed output
gradient (no loss op, as in Level 1's training step).

Per step a stage reports its compute time (thread CPU seconds on the CPU: robust to other processes on a shared
machine) and its wall seconds inside send / recv (transfer plus waiting for the neighbour). torch is imported
inside functions; ``send`` / ``recv`` are injected, so the schedule runs on threads in tests.

Stage compute measured inside the pipeline also holds what the neighbour does at the same time: on a CPU the
stages are cores of one chip that share caches and memory bandwidth, so a balanced split (both stages busy at once)
inflates its own stages' compute more than an unbalanced one (one stage mostly waits).
Separate accelerators share nothing of the kind. :func:`stage_compute_alone` therefore also times each stage's whole
step work (the forwards and backwards of every micro-batch, input gradients for non-first stages, the optimizer
step) with the other ranks idle: the load a stage puts on a chip of its own.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from pytest_genai.dabench.config import DecoderConfig


def build_layers(cfg: DecoderConfig, head_vocab: int, device: Any, *, seed: int = 0) -> list[Any]:
    """The stack's blocks (Level 1's :func:`~pytest_genai.dabench.model.build_stack`, same seed) plus an LM head
    when ``head_vocab > 0``; identical on every rank that builds it with the same seed."""
    import torch
    from torch import nn

    from pytest_genai.dabench.model import build_stack, torch_dtype

    layers = list(build_stack(cfg, device, seed=seed).blocks)
    if head_vocab:
        torch.manual_seed(seed + 7919)
        head = nn.Sequential(nn.LayerNorm(cfg.hidden), nn.Linear(cfg.hidden, head_vocab))
        layers.append(head.to(device=device, dtype=torch_dtype(cfg.dtype)))
    return layers


def output_width(cfg: DecoderConfig, head_vocab: int, layer_index: int, layer_count: int) -> int:
    """Last dimension of layer ``layer_index``'s output: ``hidden``, or ``head_vocab`` for the LM head."""
    return head_vocab if head_vocab and layer_index == layer_count - 1 else cfg.hidden


@dataclasses.dataclass
class StageStep:
    """One rank's measurements of one pipeline step."""

    wall_s: float
    compute_s: float
    comm_s: float
    output: Any = None


def run_stage_step(
    stage: Any,
    stage_index: int,
    stages: int,
    micro_inputs: Sequence[Any] | None,
    micro_grads: Sequence[Any] | None,
    recv_shape: tuple[int, ...],
    micro_batches: int,
    optimizer: Any,
    *,
    send: Callable[[Any, int], None],
    recv: Callable[[Any, int], Any],
    sync: Callable[[], None] = lambda: None,
    compute_clock: Callable[[], float] = time.thread_time,
    keep_output: bool = False,
) -> StageStep:
    """One GPipe step of stage ``stage_index``: forward all micro-batches, backward them, step the optimizer.

    ``micro_inputs`` (stage 0 only): the micro-batch inputs; ``micro_grads`` (last stage only): the output gradient
    per micro-batch; ``recv_shape``: the shape of an activation / gradient crossing a stage boundary. ``send(t,
    peer)`` and ``recv(buffer, peer)`` block. With ``keep_output`` the last stage returns its outputs (for checks).
    """
    import torch

    first, last = stage_index == 0, stage_index == stages - 1
    if first and micro_inputs is None:
        raise ValueError("stage 0 needs micro_inputs")
    if last and micro_grads is None:
        raise ValueError(f"the last stage ({stage_index}) needs micro_grads")
    dtype, device = next(stage.parameters()).dtype, next(stage.parameters()).device
    compute = 0.0
    comm = 0.0

    def timed_comm(fn: Callable[[], Any]) -> Any:
        nonlocal comm
        t0 = time.perf_counter()
        out = fn()
        comm += time.perf_counter() - t0
        return out

    def timed_compute(fn: Callable[[], Any]) -> Any:
        nonlocal compute
        c0 = compute_clock()
        out = fn()
        sync()
        compute += compute_clock() - c0
        return out

    sync()
    t0 = time.perf_counter()
    saved = []
    for i in range(micro_batches):
        if first:
            inp = micro_inputs[i]
        else:
            inp = timed_comm(lambda: recv(torch.empty(recv_shape, dtype=dtype, device=device), stage_index - 1))
            inp.requires_grad_(True)
        out = timed_compute(lambda: stage(inp))
        if not last:
            timed_comm(lambda: send(out.detach(), stage_index + 1))
        saved.append((inp, out))
    outputs = [out.detach() for _, out in saved] if keep_output and last else None
    for i, (inp, out) in enumerate(saved):
        if last:
            grad = micro_grads[i]
        else:
            grad = timed_comm(lambda: recv(torch.empty(out.shape, dtype=dtype, device=device), stage_index + 1))
        timed_compute(lambda: out.backward(grad))
        if not first:
            timed_comm(lambda: send(inp.grad, stage_index - 1))
    saved.clear()
    if optimizer is not None:
        timed_compute(lambda: (optimizer.step(), optimizer.zero_grad(set_to_none=True)))
    sync()
    return StageStep(wall_s=time.perf_counter() - t0, compute_s=compute, comm_s=comm, output=outputs)


def stage_compute_alone(
    stage: Any,
    micro_inputs: Sequence[Any],
    micro_grads: Sequence[Any],
    optimizer: Any,
    *,
    input_grad: bool,
    sync: Callable[[], None] = lambda: None,
    clock: Callable[[], float] = time.thread_time,
) -> float:
    """Seconds of one stage's work for one pipeline step, alone: what :func:`run_stage_step` times as compute.

    ``micro_inputs``: the activations entering the stage; ``micro_grads``: the gradients of its outputs;
    ``input_grad``: whether the stage back-propagates into its input (every stage but the first does).
    """
    inputs = [x.detach().requires_grad_(input_grad) for x in micro_inputs]
    sync()
    t0 = clock()
    outputs = [stage(x) for x in inputs]
    for out, grad in zip(outputs, micro_grads):
        out.backward(grad)
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync()
    return clock() - t0


def run_sequential_step(layers: Any, micro_inputs: Sequence[Any], micro_grads: Sequence[Any], optimizer: Any) -> None:
    """The one-rank baseline: every layer, the same micro-batches (forwards, then backwards, accumulated), one
    optimizer step — the same work as a pipeline step on one chip."""
    outs = [layers(x) for x in micro_inputs]
    for out, grad in zip(outs, micro_grads):
        out.backward(grad)
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def layer_loads(
    layers: Sequence[Any],
    x: Any,
    grad_for: Callable[[Any], Any],
    *,
    warmup: int = 1,
    repeats: int = 5,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.thread_time,
) -> list[float]:
    """Median seconds of each layer's forward + backward on its real input (layer ``i`` gets layer ``i-1``'s
    output), timed interleaved round by round (Level 1's :func:`~pytest_genai.runtime.timing.time_each`).

    ``grad_for(out)`` gives the output gradient to back-propagate. ``clock`` defaults to the thread's CPU time
    (CPU runs with one thread per rank); pass ``time.perf_counter`` with a ``sync`` on accelerators.
    """
    import torch

    from pytest_genai.runtime.timing import time_each

    inputs = []
    with torch.no_grad():
        h = x
        for layer in layers:
            inputs.append(h)
            h = layer(h)

    def step(layer: Any, inp: Any) -> Callable[[], None]:
        def run() -> None:
            out = layer(inp)
            out.backward(grad_for(out))
            for p in layer.parameters():
                p.grad = None

        return run

    timings = time_each([step(layer, inp) for layer, inp in zip(layers, inputs)], sync=sync, warmup=warmup,
                        repeats=repeats, clock=clock)
    return [t.median_s for t in timings]
