"""What the Level 2 benchmarks record: each run's summary as a :class:`~pytest_genai.results.measurement.Result` (pure).

One function per benchmark kind turns what a run returned into named metrics, each with its source (``measured``
for timings and what is derived from them, ``config`` for what was set, ``modeled`` for the pipeline model's
predictions; units are the metric registry's, ``claims/data/metrics_*.toml``), every interleaved round's value
where a timing claim is judged on it, labels saying how a number was obtained, and attachments (curves, loads,
vendor runs). The benchmark calls ``genai.record(result)``; it does not unpack the summary itself.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Sequence

from pytest_genai.dabench.level2.artifacts import (MIXED_PRECISION_BASELINE, PLATEAU_FROM_BATCH, ArtifactsMissing,
                                                   BatchSweep, RunComparison, batch_scaling_efficiency,
                                                   gain_per_doubling_from)
from pytest_genai.dabench.level2.config import BatchSweepConfig, ParallelConfig, PrecisionConfig
from pytest_genai.dabench.level2.deploy import BatchSweepResult, PrecisionResult
from pytest_genai.dabench.level2.partition import bubble_fraction_modeled
from pytest_genai.dabench.level2.run import (ScalingSummary, partition_ratio_rounds, partition_throughput_ratio_rounds,
                                            pipeline_step_s_modeled)
from pytest_genai.results.measurement import Measurement, Result, rounds_of

MEASURED, MODELED, CONFIG = "measured", "modeled", "config"

SCALING_BASELINE = "1 rank, same workload; dp: one rank's batch (weak scaling), tp/pp: whole batch"
MAX_STAGE_COMPUTE_METHOD = ("each stage's step work (forwards, backwards, optimizer) timed alone on rank 0, interleaved "
                            "rounds; *_in_pipeline_s: the same work timed while the stages co-run")


def _m(value: float, source: str = MEASURED, rounds: Any = None, interval: Any = None) -> Measurement:
    return Measurement(value, source=source, rounds=None if rounds is None else tuple(rounds), interval=interval)


def _stage_li_interval(run: Any) -> Any:
    """The bootstrap interval of a partition's stage load imbalance (the LI of per-stage medians, redrawing each
    stage's rounds in the pipeline), as Level 1's LI has: a statistic of medians has no per-round values, and the gate
    reads a point row past its threshold as inconclusive while the two runs' intervals overlap. None under two
    rounds."""
    from pytest_genai.dabench.balance import load_imbalance_interval

    if len(run.compute_rounds) < 2:
        return None
    return load_imbalance_interval([list(stage) for stage in zip(*run.compute_rounds)])


def _per_round(samples: int, step_rounds: Sequence[float]) -> tuple[float, ...] | None:
    """Samples/s of every timed round."""
    return rounds_of(samples / t for t in step_rounds)


def parallel_result(s: ScalingSummary, cfg: ParallelConfig) -> Result:
    """One dp / tp / pp run against its one-rank baseline: throughput and step time of both, the scaling ratio and
    efficiency and the communication share with every interleaved round's value; for pp also both partitions'
    bottleneck stages (timed alone: judged; in the pipeline: shown), their stage load imbalance and the pipeline
    model's predictions."""
    ratios = s.scaling_ratio_rounds  # per interleaved round: N ranks vs the one-rank step of that round
    metrics: dict[str, Any] = {
        "world_size": _m(s.world_size, CONFIG),
        # each side's rounds too (the gate judges them on intervals); none where a side timed fewer than two
        "samples_per_s": _m(s.samples_per_s, rounds=_per_round(s.samples_per_step, s.step_rounds)),
        "baseline_samples_per_s": _m(s.baseline_samples_per_s,
                                     rounds=_per_round(s.baseline_samples, s.baseline_rounds)),
        "step_time_s": _m(s.step_s, rounds=rounds_of(s.step_rounds)),
        "baseline_step_time_s": _m(s.baseline_step_s, rounds=rounds_of(s.baseline_rounds)),
        "scaling_throughput_ratio": _m(s.scaling_throughput_ratio, rounds=ratios),
        "scaling_efficiency": _m(s.scaling_efficiency, rounds=[r / s.world_size for r in ratios]),
        "comm_time_share": _m(s.comm_time_share, rounds=rounds_of(s.comm_share_rounds)),
    }
    labels = {"strategy": s.strategy, "comm_time_share_method": s.comm_method, "scaling_baseline": SCALING_BASELINE}
    attachments: dict[str, Any] = {"load_context": dict(s.load_context)}
    if s.strategy == "pp":
        optimal, naive = s.partitions["optimal"], s.partitions["naive"]
        # Judged on stages timed alone (a chip each); in the pipeline, co-running CPU stages share caches.
        stage_ratios = partition_ratio_rounds(optimal, naive)
        metrics.update({
            "max_stage_compute_s": _m(statistics.median(optimal.max_stage_alone_rounds),
                                      rounds=rounds_of(optimal.max_stage_alone_rounds)),
            "naive_max_stage_compute_s": _m(statistics.median(naive.max_stage_alone_rounds),
                                            rounds=rounds_of(naive.max_stage_alone_rounds)),
            "partition_max_stage_ratio": _m(statistics.median(stage_ratios), rounds=stage_ratios),
            # in the pipeline, both partitions run in every round: each round's value, so the gate judges them on
            # intervals (the recorded values stay the per-stage medians' figures)
            "max_stage_compute_in_pipeline_s": _m(optimal.max_stage_compute_s,
                                                  rounds=rounds_of(optimal.max_stage_compute_rounds)),
            "naive_max_stage_compute_in_pipeline_s": _m(naive.max_stage_compute_s,
                                                        rounds=rounds_of(naive.max_stage_compute_rounds)),
            "partition_max_stage_ratio_in_pipeline": _m(
                optimal.max_stage_compute_s / naive.max_stage_compute_s,
                rounds=rounds_of(a / b for a, b in zip(optimal.max_stage_compute_rounds,
                                                       naive.max_stage_compute_rounds))),
            "partition_throughput_ratio": _m(optimal.samples_per_s / naive.samples_per_s,
                                             rounds=rounds_of(partition_throughput_ratio_rounds(optimal, naive))),
            "load_imbalance": _m(optimal.stage_load_imbalance, interval=_stage_li_interval(optimal)),
            "naive_load_imbalance": _m(naive.stage_load_imbalance, interval=_stage_li_interval(naive)),
            "partition_max_stage_ratio_modeled": _m(
                optimal.partition.max_stage_load / naive.partition.max_stage_load, MODELED),
            "pipeline_step_time_s_modeled": _m(pipeline_step_s_modeled(optimal, cfg.micro_batches), MODELED),
            "pipeline_bubble_fraction_modeled": _m(bubble_fraction_modeled(cfg.world_size, cfg.micro_batches),
                                                   MODELED),
        })
        labels.update({
            "load_imbalance_subtasks": "pipeline stages: median measured compute per step in the pipeline, mean/max",
            "max_stage_compute_method": MAX_STAGE_COMPUTE_METHOD,
            "partition_optimal": optimal.partition.id,
            "partition_naive": naive.partition.id,
        })
        attachments["layer_loads_s"] = list(s.layer_loads_s)
    return Result(metrics, labels, attachments)


def batch_sweep_result(result: BatchSweepResult, cfg: BatchSweepConfig) -> Result:
    """The batch-size sweep: samples/s at the best batch, that batch, the gain over the smallest batch (with its
    rounds), the batch where gains plateau (when they do) and the whole curve."""
    best = max(range(len(result.batches)), key=lambda i: result.samples_per_s[i])
    metrics: dict[str, Any] = {
        "samples_per_s": _m(result.samples_per_s[best], rounds=_per_round(
            result.batches[best], result.step_rounds[best] if result.step_rounds else ())),
        "best_batch": _m(result.batches[best]),
        "batch_throughput_gain": _m(result.throughput_gain, rounds=result.throughput_gain_rounds),
    }
    plateau = result.plateau_batch
    if plateau is not None:
        metrics["plateau_batch"] = _m(plateau)
    label = (f"gains below {cfg.min_gain:.0%} after batch {plateau}" if plateau is not None
             else f"still gaining more than {cfg.min_gain:.0%} at the largest batch {cfg.batches[-1]}")
    curve = [{"batch": b, "step_time_s": t, "samples_per_s": sps, "batch_scaling_efficiency": eff}
             for b, t, sps, eff in zip(result.batches, result.step_s, result.samples_per_s,
                                       result.batch_scaling_efficiency)]
    return Result(metrics, {"plateau": label}, {"batch_curve": curve})


def precision_result(result: PrecisionResult, cfg: PrecisionConfig, *,
                     fp32_matmul_precision: str | None = None) -> Result:
    """Mixed or low precision against fp32 on the same stack: both throughputs, the step time, the output's
    relative difference from fp32, and the speedup with its rounds (``mixed_precision_speedup`` for autocast,
    ``low_precision_speedup`` for a pure low-precision step). ``fp32_matmul_precision``: torch's setting on CUDA
    ('highest' = no TF32), recorded as a label."""
    batch = cfg.workload.batch
    speedup_name = "mixed_precision_speedup" if cfg.is_mixed else "low_precision_speedup"
    metrics = {
        # each side's interleaved rounds as well: the gate judges the throughputs on intervals
        "samples_per_s": _m(batch / result.step_s, rounds=_per_round(batch, result.step_rounds)),
        "fp32_samples_per_s": _m(batch / result.fp32_step_s, rounds=_per_round(batch, result.fp32_step_rounds)),
        "step_time_s": _m(result.step_s, rounds=rounds_of(result.step_rounds)),
        "precision_output_rel_error": _m(result.output_rel_error),
        speedup_name: _m(result.speedup, rounds=result.speedup_rounds),
    }
    labels = {} if fp32_matmul_precision is None else {"fp32_matmul_precision": fp32_matmul_precision}
    return Result(metrics, labels)


def _comparison_result(comparison: RunComparison, metric: str) -> Result:
    """A vendor-run comparison (:mod:`.artifacts`): the compared metric (with the per-pair rounds when a setting
    was repeated), both sides' samples/s as the medians of their runs (what the compared ratio is taken from, each
    side's runs as its rounds when repeated), which runs were compared and how their throughput was read."""
    run = comparison.run
    rounds = comparison.rounds if len(comparison.rounds) >= 2 else None

    metrics = {metric: _m(comparison.value, rounds=rounds)}
    for name, runs in (("samples_per_s", comparison.runs), ("baseline_samples_per_s", comparison.baselines)):
        values = [r.samples_per_s for r in runs if r.samples_per_s is not None]
        if values:
            metrics[name] = _m(statistics.median(values), rounds=tuple(values) if len(values) >= 2 else None)
    labels = {
        "runs": ", ".join(r.name for r in comparison.runs),
        "baseline_runs": ", ".join(r.name for r in comparison.baselines),
        "throughput_source": run.throughput_basis,
    }
    vendor_runs = [dataclasses.asdict(r) for r in (*comparison.runs, *comparison.baselines)]
    return Result(metrics, labels, {"vendor_runs": vendor_runs})


def vendor_precision_result(comparison: RunComparison, kind: str) -> Result:
    """Mixed precision over the vendor's baseline precision (:data:`.artifacts.MIXED_PRECISION_BASELINE`)."""
    out = _comparison_result(comparison, "mixed_precision_speedup")
    return dataclasses.replace(out, labels={**out.labels, "mixed_precision_baseline": MIXED_PRECISION_BASELINE[kind][1]})


def vendor_tp_result(comparison: RunComparison) -> Result:
    """Tensor-parallel samples/s on more chips over fewer (:func:`.artifacts.tp_scaling_ratio`), and the chips."""
    out = _comparison_result(comparison, "scaling_throughput_ratio")
    return dataclasses.replace(out, metrics={**out.metrics, "world_size": _m(comparison.run.chips, CONFIG)})


def vendor_batch_result(sweep: BatchSweep) -> Result:
    """A vendor batch sweep (:func:`.artifacts.batch_sweep`): ``batch_scaling_efficiency`` over the whole sweep and,
    where two or more batches are >= 200, ``batch_gain_per_doubling_from_200``; each with its per-round values
    when every batch was repeated; samples/s at the smallest and largest batch; the curve as an attachment."""
    rounds = sweep.rounds if len(sweep.rounds) >= 2 else None
    metrics: dict[str, Any] = {
        "batch_scaling_efficiency": _m(batch_scaling_efficiency(sweep.batches, sweep.samples_per_s),
                                       rounds=rounds and [batch_scaling_efficiency(sweep.batches, r) for r in rounds]),
        "samples_per_s": _m(sweep.samples_per_s[-1]),
        "baseline_samples_per_s": _m(sweep.samples_per_s[0]),
        "largest_batch": _m(sweep.batches[-1], CONFIG),
        "smallest_batch": _m(sweep.batches[0], CONFIG),
    }
    try:
        gain = gain_per_doubling_from(sweep.batches, sweep.samples_per_s)
    except ArtifactsMissing:
        pass
    else:
        metrics["batch_gain_per_doubling_from_200"] = _m(gain, rounds=rounds and [
            gain_per_doubling_from(sweep.batches, r, PLATEAU_FROM_BATCH) for r in rounds])
    labels = {
        "runs": ", ".join(r.name for r in sweep.runs),
        "batches": ", ".join(str(b) for b in sweep.batches),
        "throughput_source": sweep.runs[0].throughput_basis,
    }
    curve = [{"batch": b, "samples_per_s": t} for b, t in zip(sweep.batches, sweep.samples_per_s)]
    return Result(metrics, labels, {"batch_curve": curve, "vendor_runs": [dataclasses.asdict(r) for r in sweep.runs]})
