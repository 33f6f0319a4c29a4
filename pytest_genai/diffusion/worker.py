"""What every rank runs: ``torchrun ... -m pytest_genai.diffusion.worker JOB.json`` (started by
:func:`pytest_genai.diffusion.ddp.run_ddp`).

``JOB.json``: ``{"device_kind": "cpu" | "cuda" | "hpu", "config": {DiffusionConfig fields}}``. Two phases in one job, so
the baseline and the scaled run share processes, threads and the machine's state:

1. **baseline**: rank 0 trains alone (no DDP) while the other ranks wait at a barrier;
2. **ddp**: every rank trains its own batch (weak scaling) with ``DistributedDataParallel``, which all-reduces the
   gradients in the backward pass, as the paper's training does.

The two are interleaved step by step (a baseline step, a barrier, a DDP step on every rank), so a slow spell of a
shared machine hits both alike and each round gives one baseline / DDP pair: the scaling ratio per round.

Each rank trains on its own synthetic fields (seed + rank); DDP broadcasts rank 0's weights at wrap time. CPU ranks
use one thread each (gloo); CUDA ranks one GPU each (NCCL, ``device_ids=[local_rank]``); HPU ranks one Gaudi each
(HCCL). A Gaudi process sees the one HPU the runtime gave it as ``hpu`` (index 0), and DDP wraps the model without
``device_ids``, as optimum-habana's accelerator and Lightning's HPU strategy do; the training steps mark lazy-mode
graph boundaries (:func:`pytest_genai.diffusion.train.graph_break`). Rank 0 gathers every rank's step times and losses and
writes ``{"schema", "device_kind", "world_size", "config", "baseline": {...}, "ranks": [{...}, ...]}``.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from pytest_genai.runtime.rank import run_worker

SCHEMA = "pytest-genai-diffusion-ddp/1"


DDP_KINDS = ("cpu", "cuda", "hpu")


def _setup(kind: str, local_rank: int) -> Any:
    """Start this rank's process group (gloo / NCCL / HCCL, :mod:`pytest_genai.runtime.procgroup`) and return the
    Device it trains on: CUDA rank r on GPU r; an HPU rank on its one visible Gaudi (index 0); a CPU rank on the CPU."""
    from pytest_genai.devices.device import Device
    from pytest_genai.runtime.procgroup import init_process_group

    if kind not in DDP_KINDS:
        raise ValueError(f"device kind {kind!r} has no DDP path here; use one of {', '.join(DDP_KINDS)}")
    init_process_group(kind, local_rank, cpu_threads=1)
    return Device(kind=kind, index=local_rank if kind == "cuda" else 0, name=kind, generation=kind)


def ddp_device_ids(kind: str, local_rank: int) -> list[int] | None:
    """``device_ids`` for DistributedDataParallel: the rank's GPU on CUDA; None on the CPU and on Gaudi, where
    optimum-habana and Lightning's HPU strategy wrap without them."""
    return [local_rank] if kind == "cuda" else None


def _summary(result: Any) -> dict[str, Any]:
    return {"step_times_s": list(result.step_times_s), "losses": list(result.losses),
            "images_per_step": result.images_per_step, "flops_per_step": result.flops_per_step}


def run_job(job: dict[str, Any], env: dict[str, int]) -> dict[str, Any] | None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from pytest_genai.diffusion.config import DiffusionConfig
    from pytest_genai.diffusion.train import TrainResult, make_trainer

    kind = job.get("device_kind", "cpu")
    cfg = DiffusionConfig(**job["config"])
    device = _setup(kind, env["local_rank"])
    hpu_mode = None
    if kind == "hpu":  # refuse before training: lazy-mode numbers must come from lazy mode
        from pytest_genai.diffusion.ddp import HPU_MODE
        from pytest_genai.runtime.hpu_mode import require_mode

        hpu_mode = require_mode(HPU_MODE)
    rank_cfg = dataclasses.replace(cfg, seed=cfg.seed + env["rank"])

    def wrap(model: Any) -> Any:
        return DistributedDataParallel(model, device_ids=ddp_device_ids(kind, env["local_rank"]))

    alone = make_trainer(cfg, device) if env["rank"] == 0 else None
    dist.barrier()
    ddp = make_trainer(rank_cfg, device, wrap=wrap)
    runs: dict[str, dict[str, list[float]]] = {"alone": {"t": [], "loss": []}, "ddp": {"t": [], "loss": []}}
    for i in range(1, cfg.warmup_steps + cfg.steps):
        if alone is not None:
            seconds, loss = alone.timed_step()
            runs["alone"]["t"].append(seconds)
            runs["alone"]["loss"].append(loss)
        dist.barrier()
        seconds, loss = ddp.timed_step()
        runs["ddp"]["t"].append(seconds)
        runs["ddp"]["loss"].append(loss)
        dist.barrier()

    def summary(trainer: Any, run: dict[str, list[float]]) -> dict[str, Any]:
        return _summary(TrainResult(tuple(run["t"][max(cfg.warmup_steps - 1, 0):]), (trainer.first_loss, *run["loss"]),
                                    trainer.images_per_step, trainer.flops_per_step))

    baseline = summary(alone, runs["alone"]) if alone is not None else None
    mine = summary(ddp, runs["ddp"])
    mine["rank"] = env["rank"]
    if kind == "hpu":  # the mode that really ran (the bridge may have ignored the requested one)
        mine["hpu_mode"] = hpu_mode
    everyone: list[Any] = [None] * env["world_size"]
    dist.all_gather_object(everyone, mine)
    if env["rank"] != 0:
        return None
    return {"schema": SCHEMA, "device_kind": kind, "world_size": env["world_size"],
            "config": dataclasses.asdict(cfg), "baseline": baseline, "ranks": everyone}


def main(argv: list[str] | None = None) -> int:
    return run_worker("pytest_genai.diffusion.worker", run_job, argv)


if __name__ == "__main__":
    sys.exit(main())
