"""What every rank runs: ``torchrun ... -m pytest_genai.dabench.level2.worker JOB.json`` (launched by
:mod:`pytest_genai.dabench.level2.run` through :func:`pytest_genai.runtime.launcher.launch`).

``JOB.json``: ``{"task": "measure" | "check", "device_kind": "cpu" | "cuda", "configs": [ParallelConfig JSON, ...]}``.
Each rank pins one CPU thread (CPU runs give every rank one core), joins the process group (gloo on the CPU, NCCL on
CUDA), runs each config's measurement (:mod:`.strategies`) or equivalence check (:mod:`.checks`), and sends its
per-rank dict to rank 0, which writes ``{"task", "world_size", "results": [[rank 0, rank 1, ...], ...]}`` to
``$PYTEST_GENAI_RESULT`` atomically; every rank leaves through :func:`pytest_genai.runtime.rank.finish`.
"""
from __future__ import annotations

import sys
from typing import Any

from pytest_genai.runtime.rank import run_worker

TASKS = ("measure", "check")


def _context(kind: str, env: dict[str, int]) -> Any:
    from pytest_genai.runtime.procgroup import init_process_group
    from pytest_genai.dabench.level2.strategies import RankContext

    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device kind {kind!r} has no torch.distributed path here; use cpu or cuda")
    device = init_process_group(kind, env["local_rank"], cpu_threads=1)
    return RankContext(rank=env["rank"], world=env["world_size"], kind=kind, device=device)


def run_job(job: dict[str, Any], env: dict[str, int]) -> dict[str, Any] | None:
    """Run every config of ``job`` on this rank; rank 0 gets the gathered result, other ranks None."""
    import torch.distributed as dist

    from pytest_genai.dabench.level2.checks import CHECKS
    from pytest_genai.dabench.level2.config import ParallelConfig
    from pytest_genai.dabench.level2.strategies import MEASURE

    task = job.get("task")
    if task not in TASKS:
        raise ValueError(f"job task {task!r} is not one of {TASKS}")
    ctx = _context(job.get("device_kind", "cpu"), env)
    gathered = []
    for raw in job["configs"]:
        cfg = ParallelConfig.from_json(raw)
        if cfg.world_size != ctx.world:
            raise ValueError(f"config {cfg.id} wants world_size={cfg.world_size}, torchrun started {ctx.world} ranks")
        mine = (MEASURE if task == "measure" else CHECKS)[cfg.strategy](cfg, ctx)
        everyone: list[Any] = [None] * ctx.world
        dist.all_gather_object(everyone, mine)
        gathered.append(everyone)
    if ctx.rank != 0:
        return None
    return {"task": task, "world_size": ctx.world, "device_kind": ctx.kind, "results": gathered}


def main(argv: list[str] | None = None) -> int:
    return run_worker("pytest_genai.dabench.level2.worker", run_job, argv)


if __name__ == "__main__":
    sys.exit(main())
