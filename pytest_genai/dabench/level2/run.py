"""Launch Level 2 scaling jobs on ``torchrun`` workers and summarize what the ranks measured.

:func:`run_parallel` writes the job file, runs :mod:`pytest_genai.dabench.level2.worker` through the runtime's
launcher (:func:`pytest_genai.runtime.launcher.launch`: timeout, every rank's log tail on failure, nothing left
running) and returns rank 0's gathered result. :func:`summarize` is pure (per-rank dicts in, a
:class:`ScalingSummary` out), so the arithmetic is tested without launching anything.

Definitions (all measured): a step's time is the slowest rank's (each step starts after a barrier); medians are
over the steps after ``warmup``; samples/s = samples per step / median step time; the one-rank baseline runs the
same workload on rank 0 alone (``dp``: one rank's batch; ``tp``/``pp``: the whole batch).
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_genai.runtime.timing import after_warmup, median_after, slowest_rank_steps
from pytest_genai.dabench.level2 import metrics
from pytest_genai.dabench.level2.config import ParallelConfig
from pytest_genai.dabench.level2.partition import Partition, pipeline_step_time_modeled

WORKER = ("-m", "pytest_genai.dabench.level2.worker")

#: How ``comm_time_share`` was obtained, per strategy (recorded as a label next to the number).
COMM_METHODS = {
    "dp": "exposed: (median DDP step - median no_sync step) / median DDP step",
    "tp": "in_call: wall time inside all-reduce calls (transfer + waiting for the peer) / step time, mean over ranks",
    "pp": "in_call: wall time inside send/recv (transfer + waiting for the neighbour stage) / step time, mean over ranks",
}


def run_parallel(configs: Sequence[ParallelConfig], work_dir: Path, *, task: str = "measure",
                 device_kind: str = "cpu", timeout_s: float = 300.0, nnodes: int = 1,
                 rdzv_endpoint: str | None = None) -> dict[str, Any]:
    """Run ``configs`` (all with the same ``world_size``) in one torchrun job; rank 0's result dict."""
    from pytest_genai.runtime.launcher import LaunchSpec, launch

    if not configs:
        raise ValueError("run_parallel needs at least one ParallelConfig")
    worlds = {c.world_size for c in configs}
    if len(worlds) != 1:
        raise ValueError(f"configs of one job must share world_size, got {sorted(worlds)}")
    world = worlds.pop()
    if world % nnodes:
        raise ValueError(f"world_size={world} is not divisible by nnodes={nnodes} (--genai-nnodes)")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    job = work_dir / "job.json"
    job.write_text(json.dumps({"task": task, "device_kind": device_kind,
                               "configs": [c.to_json() for c in configs]}), encoding="utf-8")
    spec = LaunchSpec.from_env(nproc=world // nnodes, nnodes=nnodes, rdzv_endpoint=rdzv_endpoint, timeout_s=timeout_s)
    env = {"OMP_NUM_THREADS": "1"} if device_kind == "cpu" else {}
    # plain torchrun: the scaling claims compare one rank with two, proven under load on this path (not the warm one)
    return launch([*WORKER, str(job)], spec, work_dir, env=env).result


def in_call_shares(step_s: Sequence[Sequence[float]], comm_s: Sequence[Sequence[float]], warmup: int) -> list[float]:
    """Per timed step, the ranks' mean ``comm / step`` wall-time fraction."""
    shares = []
    for step in range(warmup, len(step_s[0])):
        shares.append(statistics.fmean(metrics.time_share(c[step], s[step]) for s, c in zip(step_s, comm_s)))
    if not shares:
        raise ValueError("no timed steps to compute a communication share from")
    return shares


def in_call_share(step_s: Sequence[Sequence[float]], comm_s: Sequence[Sequence[float]], warmup: int) -> float:
    """Median over timed steps of the ranks' mean ``comm / step`` wall-time fraction."""
    return float(statistics.median(in_call_shares(step_s, comm_s, warmup)))


@dataclasses.dataclass(frozen=True)
class PartitionRun:
    """One pipeline partition as run: measured per-stage compute, and the model's prediction from layer loads."""

    name: str
    partition: Partition
    step_s: float
    samples_per_s: float
    stage_compute_s: tuple[float, ...]  # median per-step compute seconds of each stage (rank), in the pipeline
    comm_time_share: float
    alone_rounds: tuple[tuple[float, ...], ...] = ()  # per timed round: each stage's step work timed alone
    # per timed round, in the pipeline: the slowest rank's step, each stage's compute, the communication share
    step_rounds: tuple[float, ...] = ()
    compute_rounds: tuple[tuple[float, ...], ...] = ()
    comm_share_rounds: tuple[float, ...] = ()

    @property
    def max_stage_compute_s(self) -> float:
        """In the pipeline: the largest stage's median compute (co-running stages share the CPU's caches)."""
        return max(self.stage_compute_s)

    @property
    def max_stage_alone_rounds(self) -> list[float]:
        """Per timed round, the bottleneck stage's seconds with each stage timed alone."""
        return [max(r) for r in self.alone_rounds]

    @property
    def max_stage_compute_rounds(self) -> list[float]:
        """Per timed round, in the pipeline: the largest stage's compute seconds."""
        return [max(r) for r in self.compute_rounds]

    @property
    def stage_load_imbalance(self) -> float:
        from pytest_genai.dabench.balance import load_imbalance

        return load_imbalance(self.stage_compute_s)


@dataclasses.dataclass(frozen=True)
class ScalingSummary:
    strategy: str
    world_size: int
    samples_per_step: int
    baseline_samples: int
    baseline_step_s: float
    step_s: float
    comm_time_share: float
    comm_method: str
    partitions: Mapping[str, PartitionRun] = dataclasses.field(default_factory=dict)
    layer_loads_s: tuple[float, ...] = ()
    load_context: Mapping[str, float] = dataclasses.field(default_factory=dict)
    step_rounds: tuple[float, ...] = ()  # per timed round: the slowest rank's step seconds
    baseline_rounds: tuple[float, ...] = ()  # per timed round: the one-rank step seconds (interleaved)
    comm_share_rounds: tuple[float, ...] = ()  # per timed round: the communication share

    @property
    def scaling_ratio_rounds(self) -> list[float]:
        """Per interleaved round: N-rank samples/s over one-rank samples/s of the same round."""
        return [metrics.scaling_throughput_ratio(self.samples_per_step / s, self.baseline_samples / b)
                for s, b in zip(self.step_rounds, self.baseline_rounds)]

    @property
    def baseline_samples_per_s(self) -> float:
        return self.baseline_samples / self.baseline_step_s

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_step / self.step_s

    @property
    def scaling_throughput_ratio(self) -> float:
        return metrics.scaling_throughput_ratio(self.samples_per_s, self.baseline_samples_per_s)

    @property
    def scaling_efficiency(self) -> float:
        return metrics.scaling_efficiency(self.samples_per_s, self.baseline_samples_per_s, self.world_size)


def summarize(ranks: Sequence[Mapping[str, Any]], cfg: ParallelConfig) -> ScalingSummary:
    """Job-level numbers of one config from its per-rank dicts (see :mod:`pytest_genai.dabench.level2.strategies`)."""
    if len(ranks) != cfg.world_size:
        raise ValueError(f"{len(ranks)} rank results for world_size={cfg.world_size}")
    warm = cfg.warmup
    base = median_after(ranks[0]["baseline_step_s"], warm)
    base_rounds = tuple(after_warmup(ranks[0]["baseline_step_s"], warm))
    load = {f"before_{k}": v for k, v in ranks[0].get("load_before", {}).items()}
    load.update({f"after_{k}": v for k, v in ranks[0].get("load_after", {}).items()})
    common = dict(strategy=cfg.strategy, world_size=cfg.world_size, samples_per_step=cfg.samples_per_step,
                  baseline_samples=cfg.workload.batch, baseline_step_s=base, comm_method=COMM_METHODS[cfg.strategy],
                  load_context=load, baseline_rounds=base_rounds)
    if cfg.strategy == "dp":
        steps = after_warmup(slowest_rank_steps([r["step_s"] for r in ranks]), warm)
        nosyncs = after_warmup(slowest_rank_steps([r["nosync_step_s"] for r in ranks]), warm)
        step, nosync = float(statistics.median(steps)), float(statistics.median(nosyncs))
        exposed = tuple(max(0.0, metrics.time_share(max(0.0, s - n), s)) for s, n in zip(steps, nosyncs))
        return ScalingSummary(step_s=step, comm_time_share=max(0.0, metrics.time_share(max(0.0, step - nosync), step)),
                              step_rounds=tuple(steps), comm_share_rounds=exposed, **common)
    if cfg.strategy == "tp":
        steps = after_warmup(slowest_rank_steps([r["step_s"] for r in ranks]), warm)
        shares = in_call_shares([r["step_s"] for r in ranks], [r["comm_s"] for r in ranks], warm)
        return ScalingSummary(step_s=float(statistics.median(steps)), comm_time_share=float(statistics.median(shares)),
                              step_rounds=tuple(steps), comm_share_rounds=tuple(shares), **common)
    loads = tuple(float(x) for x in ranks[0]["layer_loads_s"])
    alone = ranks[0].get("alone_stage_s", {})
    runs: dict[str, PartitionRun] = {}
    for name in cfg.partitions:
        per_rank = [r["runs"][name] for r in ranks]
        steps = tuple(after_warmup(slowest_rank_steps([p["step_s"] for p in per_rank]), warm))
        step = float(statistics.median(steps))
        shares = tuple(in_call_shares([p["step_s"] for p in per_rank], [p["comm_s"] for p in per_rank], warm))
        runs[name] = PartitionRun(
            name=name,
            partition=Partition(loads, tuple(per_rank[0]["bounds"])),
            step_s=step,
            samples_per_s=cfg.samples_per_step / step,
            stage_compute_s=tuple(median_after(p["compute_s"], warm) for p in per_rank),
            comm_time_share=float(statistics.median(shares)),
            alone_rounds=(tuple(tuple(float(x) for x in r) for r in after_warmup(alone[name], warm))
                          if name in alone else ()),
            step_rounds=steps,
            compute_rounds=tuple(zip(*(tuple(float(x) for x in after_warmup(p["compute_s"], warm))
                                       for p in per_rank))),
            comm_share_rounds=shares,
        )
    main_name = "optimal" if "optimal" in runs else next(iter(runs))
    main = runs[main_name]
    return ScalingSummary(step_s=main.step_s, comm_time_share=main.comm_time_share, partitions=runs,
                          layer_loads_s=loads, step_rounds=main.step_rounds, comm_share_rounds=main.comm_share_rounds,
                          **common)


def partition_ratio_rounds(optimal: PartitionRun, naive: PartitionRun) -> list[float]:
    """Per round, the optimal split's bottleneck stage over the equal-count split's (stages timed alone)."""
    a, b = optimal.max_stage_alone_rounds, naive.max_stage_alone_rounds
    if not a or len(a) != len(b):
        raise ValueError(f"stage-alone rounds missing or unequal: {len(a)} optimal vs {len(b)} naive")
    return [x / y for x, y in zip(a, b)]


def partition_throughput_ratio_rounds(optimal: PartitionRun, naive: PartitionRun) -> list[float]:
    """Per round, the optimal split's samples/s in the pipeline over the equal-count split's: the two run in the
    same round, one after the other, so a slow spell of a shared machine hits both."""
    a, b = optimal.step_rounds, naive.step_rounds
    if len(a) != len(b):
        raise ValueError(f"pipeline step rounds unequal: {len(a)} optimal vs {len(b)} naive")
    return [y / x for x, y in zip(a, b)]


def pipeline_step_s_modeled(run: PartitionRun, micro_batches: int) -> float:
    """GPipe model of the step from the measured per-layer loads (one micro-batch each): see
    :func:`pytest_genai.dabench.level2.partition.pipeline_step_time_modeled`. Modeled, not measured."""
    return pipeline_step_time_modeled(run.partition.stage_loads, micro_batches)
