"""Data-parallel (DDP) training of the diffusion workload: launch the ranks, then summarize what they measured.

:func:`run_ddp` writes the job file and runs :mod:`pytest_genai.diffusion.worker` through the suite's launcher
(:func:`pytest_genai.runtime.launcher.launch`: a timeout, every rank's log tail when a rank crashes or hangs, nothing
left running). :func:`summarize` is pure, so the arithmetic is tested without launching anything.

Definitions (all measured): weak scaling, every rank trains ``batch_size`` images per step; a step's time is the
slowest rank's; medians over the timed steps; images/s = world x batch / median step time; the baseline is the
same workload on rank 0 alone, in the same job; scaling efficiency = images/s / (world x baseline images/s).
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

from pytest_genai.diffusion.config import DiffusionConfig
from pytest_genai.runtime.timing import slowest_rank_steps

WORKER = ("-m", "pytest_genai.diffusion.worker")


@dataclasses.dataclass(frozen=True)
class DdpSummary:
    world_size: int
    images_per_step: int  # global: every rank's batch
    step_s: float  # median over steps of the slowest rank's time
    baseline_images_per_step: int
    baseline_step_s: float
    losses: tuple[float, ...]  # rank 0's DDP losses, in step order
    flops_per_step: float  # one rank's FLOPs per step (forward + backward, FlopCounterMode)
    step_rounds: tuple[float, ...] = ()  # per interleaved round: the slowest rank's DDP step seconds
    baseline_rounds: tuple[float, ...] = ()  # per interleaved round: rank 0's one-rank step seconds
    hpu_mode: str | None = None  # on Gaudi: the execution mode every rank ran in

    @property
    def scaling_ratio_rounds(self) -> list[float]:
        """Per round: DDP images/s over the one-rank images/s of the same round."""
        return [(self.images_per_step / s) / (self.baseline_images_per_step / b)
                for s, b in zip(self.step_rounds, self.baseline_rounds)]

    @property
    def images_per_s(self) -> float:
        return self.images_per_step / self.step_s

    @property
    def baseline_images_per_s(self) -> float:
        return self.baseline_images_per_step / self.baseline_step_s

    @property
    def scaling_throughput_ratio(self) -> float:
        return self.images_per_s / self.baseline_images_per_s

    @property
    def scaling_efficiency(self) -> float:
        return self.scaling_throughput_ratio / self.world_size


def summarize(result: dict[str, Any]) -> DdpSummary:
    """A :class:`DdpSummary` from rank 0's result dict (see :mod:`pytest_genai.diffusion.worker`)."""
    try:
        ranks = sorted(result["ranks"], key=lambda r: r["rank"])
        baseline = result["baseline"]
        world = int(result["world_size"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a diffusion DDP result (missing {exc}); was it written by "
                         "pytest_genai.diffusion.worker?") from None
    if len(ranks) != world:
        raise ValueError(f"the result has {len(ranks)} ranks' reports for world_size={world}")
    steps = slowest_rank_steps([r["step_times_s"] for r in ranks])
    modes = {r.get("hpu_mode") for r in ranks}
    if len(modes) != 1:
        raise ValueError(f"the ranks ran in different Gaudi execution modes {sorted(map(str, modes))}")
    return DdpSummary(
        world_size=world,
        images_per_step=sum(int(r["images_per_step"]) for r in ranks),
        step_s=float(statistics.median(steps)),
        baseline_images_per_step=int(baseline["images_per_step"]),
        baseline_step_s=float(statistics.median(baseline["step_times_s"])),
        losses=tuple(float(x) for x in ranks[0]["losses"]),
        flops_per_step=float(ranks[0]["flops_per_step"]),
        step_rounds=tuple(steps),
        baseline_rounds=tuple(float(x) for x in baseline["step_times_s"]),
        hpu_mode=modes.pop(),
    )


#: Paper A trained the diffusion model on Gaudi in SynapseAI's lazy mode; the training steps mark steps for it.
HPU_MODE = "lazy"


def rank_env(device_kind: str) -> dict[str, str]:
    """Environment for the ranks: one OpenMP thread per CPU rank; lazy mode on Gaudi (``PT_HPU_LAZY_MODE=1``; the
    Intel Gaudi bridge reads it at import, and newer releases default to eager mode, 0), which the training steps'
    mark_step calls are written for."""
    if device_kind == "cpu":
        return {"OMP_NUM_THREADS": "1"}
    if device_kind == "hpu":
        from pytest_genai.runtime.hpu_mode import mode_env

        return mode_env(HPU_MODE)
    return {}


def run_ddp(cfg: DiffusionConfig, world: int, work_dir: Path, *, device_kind: str = "cpu",
            timeout_s: float = 300.0) -> dict[str, Any]:
    """Train ``cfg`` on ``world`` ranks (after rank 0's one-rank baseline); rank 0's result dict."""
    from pytest_genai.runtime.launcher import LaunchSpec, launch

    if world < 2:
        raise ValueError(f"a DDP scaling run needs at least 2 ranks, got world={world}")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    job = work_dir / "job.json"
    job.write_text(json.dumps({"device_kind": device_kind, "config": dataclasses.asdict(cfg)}), encoding="utf-8")
    env = rank_env(device_kind)
    # plain torchrun: the weak-scaling claim compares one rank with two, proven under load on this path
    result = launch([*WORKER, str(job)], LaunchSpec(nproc=world, timeout_s=timeout_s), work_dir, env=env).result
    assert result is not None  # one node: rank 0 is local
    return result
