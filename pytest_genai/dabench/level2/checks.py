"""Numerical equivalence of the parallel runs with one rank (float64), run by every rank of a ``check`` job.

Each check builds the full model on every rank from the same seed, computes the one-rank reference (output and
gradients on the whole batch), runs the parallel version, and returns the largest relative differences
``max|parallel - reference| / max|reference|`` for the outputs and the gradients the rank owns. A correct
implementation gives rounding-level numbers (about 1e-15 in float64); a wrong shard, a missing all-reduce or a
mis-ordered send is off by order 1.
"""
from __future__ import annotations

import copy
from typing import Any

from pytest_genai.dabench.level2.config import ParallelConfig

#: Where the checks draw their weights: the CPU generator, then moved. A GPU's generator draws by the kernel's grid,
#: which follows the SM count, so ranks on two GPU models would build two models from one seed and every check
#: would report the difference; the checks' models are small, so the host build costs nothing.
HOST = "cpu"


def _rel(a: Any, b: Any) -> float:
    scale = float(b.abs().max())
    return float((a - b).abs().max()) / (scale if scale > 0 else 1.0)


def check_tp(cfg: ParallelConfig, ctx: Any) -> dict[str, float]:
    import torch

    from pytest_genai.dabench.model import build_stack, make_input
    from pytest_genai.dabench.level2.comm import TimedComm
    from pytest_genai.dabench.level2.tensor_parallel import shard_slices, shard_stack

    w = cfg.workload
    full = build_stack(w, HOST, seed=cfg.seed).double().to(ctx.device)
    x = make_input(w, ctx.device, seed=cfg.seed + 1).double().requires_grad_(True)
    # drawn on the CPU generator (the same on every device), then moved: backward needs them on the output's device
    grad_out = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(ctx.device)
    ref = full(x)
    ref.backward(grad_out)
    comm = TimedComm(sync=ctx.sync)
    tp = shard_stack(full, ctx.rank, ctx.world, comm.all_reduce)
    x2 = x.detach().clone().requires_grad_(True)
    out = tp(x2)
    out.backward(grad_out)
    s = shard_slices(w.hidden, w.heads, w.ffn_hidden, ctx.rank, ctx.world)
    rows = torch.cat([torch.arange(r.start, r.stop) for r in s["qkv_rows"]])
    cols = slice(s["proj_cols"].start, s["proj_cols"].stop)
    f = slice(s["fc1_rows"].start, s["fc1_rows"].stop)
    grad_err = 0.0
    for fb, tb in zip(full.blocks, tp):
        pairs = [
            (tb.qkv.weight.grad, fb.qkv.weight.grad[rows]), (tb.qkv.bias.grad, fb.qkv.bias.grad[rows]),
            (tb.proj.weight.grad, fb.proj.weight.grad[:, cols]), (tb.proj_bias.grad, fb.proj.bias.grad),
            (tb.fc1.weight.grad, fb.fc1.weight.grad[f]), (tb.fc1.bias.grad, fb.fc1.bias.grad[f]),
            (tb.fc2.weight.grad, fb.fc2.weight.grad[:, f]), (tb.fc2_bias.grad, fb.fc2.bias.grad),
            (tb.ln1.weight.grad, fb.ln1.weight.grad), (tb.ln2.bias.grad, fb.ln2.bias.grad),
        ]
        grad_err = max(grad_err, *(_rel(a, b) for a, b in pairs))
    return {"output": _rel(out, ref), "input_grad": _rel(x2.grad, x.grad), "param_grad": grad_err,
            "comm_calls": comm.calls}


def check_pp(cfg: ParallelConfig, ctx: Any) -> dict[str, float]:
    import torch
    from torch import nn

    from pytest_genai.dabench.model import make_input
    from pytest_genai.dabench.level2.comm import TimedComm
    from pytest_genai.dabench.level2.partition import naive_partition
    from pytest_genai.dabench.level2.pipeline import build_layers, output_width, run_sequential_step, run_stage_step

    w = cfg.workload
    layers = [layer.double().to(ctx.device) for layer in build_layers(w, cfg.head_vocab, HOST, seed=cfg.seed)]
    width = output_width(w, cfg.head_vocab, len(layers) - 1, len(layers))
    x = make_input(w, ctx.device, seed=cfg.seed + 1).double()
    micro = list(x.chunk(cfg.micro_batches))
    gen = torch.Generator().manual_seed(5)
    grads = [torch.randn((m.shape[0], w.seq_len, width), generator=gen, dtype=torch.float64).to(ctx.device)
             for m in micro]
    ref = nn.Sequential(*copy.deepcopy(layers))
    ref_out = [ref(m).detach() for m in micro]
    run_sequential_step(ref, micro, grads, None)
    part = naive_partition([1.0] * len(layers), ctx.world)
    mine = list(part.stage_layers[ctx.rank])
    stage = nn.Sequential(*(copy.deepcopy(layers[i]) for i in mine))
    first, last = ctx.rank == 0, ctx.rank == ctx.world - 1
    comm = TimedComm(sync=ctx.sync)
    step = run_stage_step(stage, ctx.rank, ctx.world, micro if first else None, grads if last else None,
                          (micro[0].shape[0], w.seq_len, w.hidden), cfg.micro_batches, None,
                          send=comm.send, recv=comm.recv, sync=ctx.sync, keep_output=True)
    grad_err = max(_rel(p.grad, q.grad) for i, layer in zip(mine, stage)
                   for p, q in zip(layer.parameters(), ref[i].parameters()))
    out_err = max(_rel(a, b) for a, b in zip(step.output, ref_out)) if last else 0.0
    return {"output": out_err, "param_grad": grad_err, "comm_calls": comm.calls}


def check_dp(cfg: ParallelConfig, ctx: Any) -> dict[str, float]:
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    from pytest_genai.dabench.model import build_stack, make_input

    w = cfg.workload
    xs = [make_input(w, ctx.device, seed=cfg.seed + 1 + r).double() for r in range(ctx.world)]
    gen = torch.Generator().manual_seed(7)
    gs = [torch.randn(x.shape, generator=gen, dtype=torch.float64).to(ctx.device) for x in xs]
    ref = build_stack(w, HOST, seed=cfg.seed).double().to(ctx.device)
    ref(torch.cat(xs)).backward(torch.cat(gs))
    ddp = DDP(build_stack(w, HOST, seed=cfg.seed).double().to(ctx.device))
    ddp(xs[ctx.rank]).backward(gs[ctx.rank])
    # DDP averages the ranks' gradients; the whole-batch reference sums them.
    grad_err = max(_rel(p.grad * ctx.world, q.grad) for p, q in zip(ddp.module.parameters(), ref.parameters()))
    return {"param_grad": grad_err}


CHECKS = {"dp": check_dp, "tp": check_tp, "pp": check_pp}

