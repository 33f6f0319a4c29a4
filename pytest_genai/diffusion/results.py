"""What the diffusion benchmarks record: each run's summary as a :class:`~pytest_genai.results.measurement.Result` (pure).

The single-device run (:class:`~pytest_genai.diffusion.train.TrainResult`) and the DDP run against its one-rank
baseline (:class:`~pytest_genai.diffusion.ddp.DdpSummary`) as named metrics, each with its source (``measured`` for
timings, losses, memory and what is derived from them; ``config`` for the world size; units are the metric
registry's, ``claims/data/metrics_*.toml``) and every interleaved round's value where a timing claim is judged on
it. The benchmark calls ``genai.record(result)``.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from pytest_genai.diffusion.ddp import DdpSummary
from pytest_genai.diffusion.train import TrainResult
from pytest_genai.results.measurement import Measurement, Result

MEASURED, CONFIG = "measured", "config"


def _m(value: float, source: str = MEASURED, rounds: Any = None) -> Measurement:
    return Measurement(value, source=source, rounds=None if rounds is None else tuple(rounds))


def row_config(cfg: Any, kind: str, hpu_mode: str | None = None, **extra: Any) -> dict[str, Any]:
    """The row's config (what it is matched on across runs): the run's settings, ``extra`` (id, strategy, world
    size) and, on Gaudi, the execution mode that ran: a lazy and an eager run are different benchmarks."""
    config = {**dataclasses.asdict(cfg), **extra}
    if kind == "hpu":
        if hpu_mode is None:
            raise ValueError("a Gaudi diffusion row needs the execution mode it ran in (lazy or eager)")
        config["hpu_mode"] = hpu_mode
    return config


def run_peak_tflops(spec_peak: float | None, kind: str, spec_threads: int | None, threads: int) -> float | None:
    """The peak a run on ``threads`` CPU threads is measured against: the CPU's measured peak is for
    ``spec_threads`` threads, so it scales per thread (None when unknown); other devices keep the spec's peak."""
    if not spec_peak:
        return None
    if kind != "cpu":
        return spec_peak
    return spec_peak * threads / spec_threads if spec_threads else None


def throughput_result(result: TrainResult, peak_tflops: float | None = None,
                      peak_memory_bytes: int | None = None) -> Result:
    """The single-device run: throughput, step time, achieved TFLOP/s (and MFU against the device's peak when
    known), the loss at the start and over the last three steps, and the peak memory (when the device tracks it)."""
    # every timed step's figures as a round: the gate and a generation claim are judged on their interval
    steps = result.step_times_s
    tflops = [result.flops_per_step / t / 1e12 for t in steps]
    metrics = {"images_per_s": _m(result.images_per_s, rounds=[result.images_per_step / t for t in steps]),
               "step_time_s": _m(result.median_step_s, rounds=steps),
               "achieved_tflops": _m(result.achieved_tflops, rounds=tflops)}
    if peak_tflops:
        metrics["mfu"] = _m(result.achieved_tflops / peak_tflops, rounds=[t / peak_tflops for t in tflops])
    metrics["loss_start"] = _m(result.losses[0])
    metrics["loss_end"] = _m(sum(result.losses[-3:]) / 3)
    if peak_memory_bytes is not None:
        metrics["peak_memory_bytes"] = _m(peak_memory_bytes)
    return Result(metrics)


def scaling_result(s: DdpSummary) -> Result:
    """The DDP run: both sides' throughput and step time, the scaling ratio and efficiency with every interleaved
    round's value (timing claims are judged on their interval), and rank 0's losses."""
    ratios = s.scaling_ratio_rounds  # per round: DDP step vs the one-rank step of that round
    rounds = {"scaling_throughput_ratio": ratios, "scaling_efficiency": [r / s.world_size for r in ratios]}
    if len(s.step_rounds) >= 2 and len(s.baseline_rounds) >= 2:  # each side's own rounds: the gate's intervals
        rounds.update(step_time_s=s.step_rounds, baseline_step_time_s=s.baseline_rounds,
                      images_per_s=[s.images_per_step / t for t in s.step_rounds],
                      baseline_images_per_s=[s.baseline_images_per_step / t for t in s.baseline_rounds])
    measured = {
        "images_per_s": s.images_per_s,
        "baseline_images_per_s": s.baseline_images_per_s,
        "step_time_s": s.step_s,
        "baseline_step_time_s": s.baseline_step_s,
        "scaling_throughput_ratio": s.scaling_throughput_ratio,
        "scaling_efficiency": s.scaling_efficiency,
        "loss_start": s.losses[0],
        "loss_end": sum(s.losses[-3:]) / 3,
    }
    metrics = {name: _m(value, rounds=rounds.get(name)) for name, value in measured.items()}
    return Result({"world_size": _m(s.world_size, CONFIG), **metrics})
