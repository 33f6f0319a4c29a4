"""Run a fine-tuning configuration on ``torchrun`` workers and summarize rank 0's result.

``summarize`` is pure (a result dict in, a :class:`RunSummary` out), so the arithmetic is tested without
launching anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_genai.runtime.launcher import LaunchSpec, launch
from pytest_genai.runtime.timing import slowest_rank_steps
from pytest_genai.train import metrics
from pytest_genai.train.config import ThroughputConfig, WikitextConfig
from pytest_genai.train.requirements import check_requirements

WORKER = ("-m", "pytest_genai.train.worker")


@dataclass(frozen=True)
class SkippedRun:
    """A multi-node job its nodes agreed not to run (one node's memory cannot hold it): why, per node."""

    reason: str


@dataclass(frozen=True)
class RunSummary:
    """The job-level numbers of one run, all measured (the analytic FLOPs per step are the results' to model:
    :func:`pytest_genai.train.results.throughput_result`)."""

    world_size: int
    global_batch: int
    seq_len: int
    step_s: tuple[float, ...]
    median_step_s: float
    tokens_per_s: float
    samples_per_s: float
    peak_memory_bytes: tuple[int, ...]
    memory_measure: str
    losses: tuple[float, ...]
    attention_impl: str | None
    wall_s: float | None
    extra: Mapping[str, Any]
    warmup: int = 0

    @property
    def timed_step_s(self) -> tuple[float, ...]:
        """The step times after the warm-up steps (what the median is taken over)."""
        return self.step_s[self.warmup:]

    @property
    def max_peak_memory_bytes(self) -> int:
        return max(self.peak_memory_bytes)


def summarize(result: Mapping[str, Any], cfg: ThroughputConfig | WikitextConfig, warmup: int,
              wall_s: float | None = None) -> RunSummary:
    """Job-level numbers from rank 0's result: slowest-rank step times, their median after ``warmup``, throughput."""
    ranks = result["ranks"]
    world = int(result["world_size"])
    if len(ranks) != world:
        raise ValueError(f"result has {len(ranks)} rank entries for world_size={world}")
    steps = slowest_rank_steps([r["step_s"] for r in ranks])
    median = metrics.median_step_s(steps, warmup)
    global_batch = cfg.micro_batch * world
    extra = {k: v for k, v in ranks[0].items() if k not in ("step_s", "peak_memory_bytes", "memory_measure",
                                                             "attention_impl")}
    return RunSummary(
        world_size=world,
        global_batch=global_batch,
        seq_len=cfg.seq_len,
        step_s=tuple(steps),
        median_step_s=median,
        tokens_per_s=metrics.tokens_per_s(global_batch, cfg.seq_len, median),
        samples_per_s=metrics.samples_per_s(global_batch, median),
        peak_memory_bytes=tuple(int(r["peak_memory_bytes"]) for r in ranks),
        memory_measure=str(ranks[0]["memory_measure"]),
        losses=tuple(float(x) for x in result["losses"]),
        attention_impl=ranks[0].get("attention_impl"),
        wall_s=wall_s,
        extra=extra,
        warmup=warmup,
    )


def launch_config(cfg: ThroughputConfig | WikitextConfig, device_kind: str, spec: LaunchSpec, work_dir: Path,
                  env: Mapping[str, str] | None = None, node_problem: str | None = None
                  ) -> tuple[dict[str, Any] | None, float]:
    """Write the worker's spec into ``work_dir``, run it on ``spec.world_size`` ranks; (result, wall seconds).

    The result is None on the nodes of a multi-node job other than node 0. A missing optional package (DeepSpeed
    for ZeRO, optimum-habana on hpu) raises :class:`MissingRequirement` here, before any rank starts. On several
    nodes ``node_problem`` (why this node's memory cannot hold the run, or None) goes to the ranks, which agree
    before building anything: when any node has one, every rank stops and rank 0's result says ``skipped``."""
    check_requirements(cfg, device_kind)
    if isinstance(cfg, ThroughputConfig):  # a full-size model takes minutes to build before its first step
        import dataclasses

        from pytest_genai.train.archs import get_arch
        from pytest_genai.train.planner import job_timeout_s

        spec = dataclasses.replace(spec, timeout_s=job_timeout_s(spec.timeout_s, get_arch(cfg.model, cfg.scale),
                                                                 device_kind, lora=cfg.lora is not None,
                                                                 precision=cfg.precision))
    if device_kind == "hpu":  # the bridge reads the mode at import: it must be in the ranks' environment
        from pytest_genai.runtime.hpu_mode import mode_env
        from pytest_genai.train.gaudi import hpu_mode_for

        env = {**(env or {}), **mode_env(hpu_mode_for(cfg))}
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    spec_path = work_dir / "worker_spec.json"
    job: dict[str, Any] = {"device": device_kind, "config": cfg.to_json()}
    if spec.nnodes > 1:
        job["node_problem"] = node_problem
    spec_path.write_text(json.dumps(job), encoding="utf-8")
    done = launch([*WORKER, str(spec_path)], spec, work_dir, env=env, warm=device_kind == "cpu")
    return done.result, done.wall_s


def run(cfg: ThroughputConfig | WikitextConfig, device_kind: str, spec: LaunchSpec, work_dir: Path,
        env: Mapping[str, str] | None = None, node_problem: str | None = None) -> RunSummary | SkippedRun | None:
    """Launch ``cfg`` and summarize it (warm-up steps: ``cfg.warmup`` for throughput runs, 1 for WikiText).

    None on the nodes other than node 0 of a multi-node job (they take part; node 0 records); a
    :class:`SkippedRun` when the nodes agreed not to run it (``node_problem``, :func:`launch_config`)."""
    result, wall = launch_config(cfg, device_kind, spec, work_dir, env, node_problem)
    if result is None:
        return None
    if "skipped" in result:
        return SkippedRun(str(result["skipped"]))
    warmup = cfg.warmup if isinstance(cfg, ThroughputConfig) else min(1, cfg.steps - 1)
    return summarize(result, cfg, warmup, wall)


class RunCache:
    """Runs each (device kind, config, launch) once per session; later requests get the same summary (or error).

    ``fresh=True`` launches again: the comparisons (DDP against a sharded strategy, fused against unfused attention)
    launch each side several times (:mod:`pytest_genai.train.launches`).
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self._done: dict[tuple[str, str, str], RunSummary | BaseException] = {}

    def get(self, cfg: ThroughputConfig | WikitextConfig, device_kind: str, spec: LaunchSpec,
            env: Mapping[str, str] | None = None, *, fresh: bool = False, node_problem: str | None = None
            ) -> RunSummary | SkippedRun | None:
        """The run's summary; ``fresh=True`` launches it even if it already ran (a benchmark timing its own job);
        ``node_problem``: :func:`launch_config`."""
        key = (device_kind, cfg.id, spec.id)
        if fresh or key not in self._done:
            try:
                work = self.root / f"{device_kind}-{spec.id}-{cfg.id}"
                self._done[key] = run(cfg, device_kind, spec, work, env, node_problem)
            except Exception as exc:  # remembered: dependents fail with the same logs instead of relaunching
                self._done[key] = exc
        done = self._done[key]
        if isinstance(done, BaseException):
            raise done
        return done
