"""What each rank measures for one :class:`~pytest_genai.dabench.level2.config.ParallelConfig` (run by the worker).

Rounds interleave the one-rank baseline and the multi-rank run, so that a slow spell of a shared machine hits both
alike: in each round rank 0 first times one baseline step while the other ranks wait at a barrier (the baseline has a
core to itself), then all ranks time the multi-rank step(s). Every timed multi-rank step starts after a barrier; each
rank reports its own step seconds and the job's step time is the slowest rank's.

* ``dp`` — ``DistributedDataParallel``; each rank trains ``workload.batch`` samples. Steps with gradient all-reduce
  alternate with ``no_sync`` steps (same compute, no all-reduce): their median difference is the communication the
  overlap did not hide (``exposed``).
* ``tp`` — :mod:`.tensor_parallel` shards of the same stack on the same batch; every all-reduce
  is timed (``in_call``: transfer plus waiting for the peer).
* ``pp`` — :mod:`.pipeline` stages; per-layer loads are measured first on rank 0, the
  ``optimal`` and ``naive`` partitions computed from them, and each is run; send / recv are timed (``in_call``).
  Then rank 0 times every stage of both partitions alone (the other ranks wait at a barrier), interleaved round by
  round (``alone_stage_s``): the per-chip stage loads the partition comparison is judged on.

torch is imported inside functions. Results are plain JSON-able dicts.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from pytest_genai.dabench.level2.config import ParallelConfig


@dataclasses.dataclass(frozen=True)
class RankContext:
    rank: int
    world: int
    kind: str
    device: Any

    def sync(self) -> None:
        if self.kind == "cuda":
            import torch

            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier()

    @property
    def compute_clock(self) -> Callable[[], float]:
        """Thread CPU time on the CPU (one compute thread per rank; unaffected by time spent descheduled on a shared
        machine); the host clock after a synchronize on accelerators."""
        return time.thread_time if self.kind == "cpu" else time.perf_counter


def _timed(fn: Callable[[], Any], ctx: RankContext, *, barrier: bool) -> float:
    if barrier:
        ctx.barrier()
    ctx.sync()
    t0 = time.perf_counter()
    fn()
    ctx.sync()
    return time.perf_counter() - t0


def _train_step(module: Any, x: Any, grad_out: Any, optimizer: Any) -> Callable[[], None]:
    def step() -> None:
        module(x).backward(grad_out)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def baseline_round(step: Callable[[], None] | None, ctx: RankContext) -> float:
    """One one-rank step on rank 0 while the other ranks wait at a barrier; its seconds on rank 0, 0.0 elsewhere."""
    seconds = _timed(step, ctx, barrier=False) if ctx.rank == 0 and step is not None else 0.0
    ctx.barrier()
    return seconds


def rank0_list(values: list[float]) -> list[float]:
    """Rank 0's list, on every rank."""
    import torch.distributed as dist

    box = [values]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _load_context() -> dict[str, float]:
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        return {}
    return {"loadavg_1m": one, "loadavg_5m": five}


def measure_dp(cfg: ParallelConfig, ctx: RankContext) -> dict[str, Any]:
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    from pytest_genai.dabench.model import build_stack, make_input

    w = cfg.workload
    x = make_input(w, ctx.device, seed=cfg.seed + 1 + ctx.rank)
    grad_out = torch.full_like(x, 1.0 / x.numel())
    one_rank = None
    if ctx.rank == 0:
        ref = build_stack(w, ctx.device, seed=cfg.seed)
        one_rank = _train_step(ref, x, grad_out, torch.optim.AdamW(ref.parameters(), lr=1e-4))
    stack = build_stack(w, ctx.device, seed=cfg.seed)
    ddp = DDP(stack, device_ids=[ctx.device.index] if ctx.kind == "cuda" else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    synced = _train_step(ddp, x, grad_out, opt)

    def unsynced() -> None:
        with ddp.no_sync():
            ddp(x).backward(grad_out)
        opt.step()
        opt.zero_grad(set_to_none=True)

    load_before = _load_context()
    base, sync_s, nosync_s = [], [], []
    for _ in range(cfg.warmup + cfg.repeats):
        base.append(baseline_round(one_rank, ctx))
        sync_s.append(_timed(synced, ctx, barrier=True))
        nosync_s.append(_timed(unsynced, ctx, barrier=True))
    return {"baseline_step_s": rank0_list(base), "step_s": sync_s, "nosync_step_s": nosync_s,
            "load_before": load_before, "load_after": _load_context()}


def measure_tp(cfg: ParallelConfig, ctx: RankContext) -> dict[str, Any]:
    import torch

    from pytest_genai.dabench.model import build_stack, make_input
    from pytest_genai.dabench.level2.comm import TimedComm
    from pytest_genai.dabench.level2.tensor_parallel import shard_stack

    w = cfg.workload
    x = make_input(w, ctx.device, seed=cfg.seed + 1)
    grad_out = torch.full_like(x, 1.0 / x.numel())
    full = build_stack(w, ctx.device, seed=cfg.seed)
    comm = TimedComm(sync=ctx.sync)
    tp = shard_stack(full, ctx.rank, ctx.world, comm.all_reduce)
    step = _train_step(tp, x, grad_out, torch.optim.AdamW(tp.parameters(), lr=1e-4))
    one_rank = _train_step(full, x, grad_out, torch.optim.AdamW(full.parameters(), lr=1e-4)) if ctx.rank == 0 else None
    load_before = _load_context()
    base, step_s, comm_s, calls = [], [], [], 0
    for _ in range(cfg.warmup + cfg.repeats):
        base.append(baseline_round(one_rank, ctx))
        comm.take()
        step_s.append(_timed(step, ctx, barrier=True))
        seconds, calls = comm.take()
        comm_s.append(seconds)
    return {"baseline_step_s": rank0_list(base), "step_s": step_s, "comm_s": comm_s, "comm_calls_per_step": calls,
            "load_before": load_before, "load_after": _load_context()}


def _pp_inputs(cfg: ParallelConfig, ctx: RankContext, head_width: int) -> tuple[list[Any], list[Any]]:
    import torch

    from pytest_genai.dabench.model import make_input

    w = cfg.workload
    x = make_input(w, ctx.device, seed=cfg.seed + 1)
    micro = list(x.chunk(cfg.micro_batches))
    scale = 1.0 / (x.shape[0] * w.seq_len * head_width)
    grads = [torch.full((m.shape[0], w.seq_len, head_width), scale, dtype=x.dtype, device=x.device) for m in micro]
    return micro, grads


def measure_pp(cfg: ParallelConfig, ctx: RankContext) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from pytest_genai.dabench.level2.comm import TimedComm
    from pytest_genai.dabench.level2.partition import naive_partition, optimal_partition
    from pytest_genai.dabench.level2.pipeline import build_layers, layer_loads, output_width, run_stage_step

    w = cfg.workload
    layers = build_layers(w, cfg.head_vocab, ctx.device, seed=cfg.seed)
    width = output_width(w, cfg.head_vocab, len(layers) - 1, len(layers))
    micro, grads = _pp_inputs(cfg, ctx, width)

    box: list[Any] = [None]
    if ctx.rank == 0:
        box[0] = layer_loads(layers, micro[0], lambda out: torch.full_like(out, 1.0 / out.numel()),
                             warmup=1, repeats=max(3, cfg.repeats), sync=ctx.sync, clock=ctx.compute_clock)
    dist.broadcast_object_list(box, src=0)
    loads = box[0]
    builders = {"optimal": optimal_partition, "naive": naive_partition}
    partitions = {name: builders[name](loads, ctx.world) for name in cfg.partitions}

    one_rank, stages, alone = _pp_rank_work(layers, partitions, micro, grads, ctx)
    comm = TimedComm(sync=ctx.sync)
    recv_shape = (micro[0].shape[0], w.seq_len, w.hidden)
    first, last = ctx.rank == 0, ctx.rank == ctx.world - 1
    del layers
    runs: dict[str, Any] = {name: {"bounds": list(part.bounds), "step_s": [], "compute_s": [], "comm_s": []}
                            for name, part in partitions.items()}
    load_before = _load_context()
    base = []
    for _ in range(cfg.warmup + cfg.repeats):
        base.append(baseline_round(one_rank, ctx))
        for name, (stage, opt) in stages.items():
            ctx.barrier()
            step = run_stage_step(stage, ctx.rank, ctx.world, micro if first else None, grads if last else None,
                                  recv_shape, cfg.micro_batches, opt, send=comm.send, recv=comm.recv,
                                  sync=ctx.sync, compute_clock=ctx.compute_clock)
            runs[name]["step_s"].append(step.wall_s)
            runs[name]["compute_s"].append(step.compute_s)
            runs[name]["comm_s"].append(step.comm_s)
    alone_s: dict[str, list[list[float]]] = {name: [] for name in partitions}
    for _ in range(cfg.warmup + cfg.repeats):  # each stage alone: the other ranks wait at the barrier
        if ctx.rank == 0:
            for name, stage_runs in alone.items():
                alone_s[name].append([run() for run in stage_runs])
        ctx.barrier()
    box = [alone_s]
    dist.broadcast_object_list(box, src=0)
    return {"baseline_step_s": rank0_list(base), "layer_loads_s": loads, "runs": runs, "alone_stage_s": box[0],
            "load_before": load_before, "load_after": _load_context()}


def _pp_rank_work(layers: list[Any], partitions: dict[str, Any], micro: list[Any], grads: list[Any],
                  ctx: RankContext) -> tuple[Callable[[], None] | None, dict[str, Any], dict[str, list[Callable[[], float]]]]:
    """This rank's pipeline work over the one set of ``layers`` it built: the one-rank baseline step (rank 0), its
    stage of each partition with the optimizer to step it, and (rank 0) every stage of each partition alone.

    All of them run the same layer modules with one AdamW over them, never copies: each step zeroes its gradients
    (``set_to_none``) and AdamW steps only the parameters that have one, so a stage steps its own layers as a
    stage-sized optimizer would. Copies put the baseline, both partitions' stand-alone stages and the rank's own
    stages on rank 0 at once: about four models with their gradients and optimizer states, over an 80 GB card at
    full scale. The weights drift by the shared steps; what is timed does not depend on their values.
    """
    import torch
    from torch import nn

    from pytest_genai.dabench.level2.pipeline import run_sequential_step

    used = range(len(layers)) if ctx.rank == 0 else sorted(
        {i for part in partitions.values() for i in part.stage_layers[ctx.rank]})
    opt = torch.optim.AdamW([p for i in used for p in layers[i].parameters()], lr=1e-4)
    one_rank = None
    if ctx.rank == 0:
        seq = nn.Sequential(*layers)
        one_rank = lambda: run_sequential_step(seq, micro, grads, opt)  # noqa: E731
    stages = {name: (nn.Sequential(*(layers[i] for i in part.stage_layers[ctx.rank])), opt)
              for name, part in partitions.items()}
    alone = _alone_stages(layers, partitions, micro, grads, opt, ctx) if ctx.rank == 0 else {}
    return one_rank, stages, alone


def _alone_stages(layers: list[Any], partitions: dict[str, Any], micro: list[Any], grads: list[Any], opt: Any,
                  ctx: RankContext) -> dict[str, list[Callable[[], float]]]:
    """Per partition, one callable per stage that times that stage's step work alone (the shared layers and ``opt``,
    see :func:`_pp_rank_work`)."""
    import torch
    from torch import nn

    from pytest_genai.dabench.level2.pipeline import stage_compute_alone

    with torch.no_grad():  # the activations entering each layer, per micro-batch
        entering = [list(micro)]
        for layer in layers:
            entering.append([layer(x) for x in entering[-1]])
    out: dict[str, list[Callable[[], float]]] = {}
    for name, part in partitions.items():
        runs = []
        for s, layer_ids in enumerate(part.stage_layers):
            stage = nn.Sequential(*(layers[i] for i in layer_ids))
            last = layer_ids[-1] == len(layers) - 1
            out_grads = grads if last else [torch.full_like(y, 1.0 / y.numel()) for y in entering[layer_ids[-1] + 1]]

            def run(stage=stage, inputs=entering[layer_ids[0]], out_grads=out_grads, first=s == 0) -> float:
                return stage_compute_alone(stage, inputs, out_grads, opt, input_grad=not first, sync=ctx.sync,
                                           clock=ctx.compute_clock)

            runs.append(run)
        out[name] = runs
    return out


MEASURE = {"dp": measure_dp, "tp": measure_tp, "pp": measure_pp}
