"""What the fine-tuning benchmarks record: each run's summary as a :class:`~pytest_genai.results.measurement.Result` (pure).

One function per benchmark turns what the runs returned into named metrics, each with its source (``measured`` for
timings, losses, memory and what is derived from them; ``modeled`` for the analytic FLOPs and the fit planner's
prediction; units are the metric registry's, ``claims/data/metrics_*.toml``), labels saying how a number was
obtained and attachments (the planner's terms, per-rank peaks, every launch of a comparison). The comparisons that
need extra runs (DDP against a sharded strategy, fused against unfused attention) are separate builders taking both
sides' interleaved launches (:mod:`pytest_genai.train.launches`). ``benchmarks/test_finetune.py`` runs the jobs, calls ``genai.record(result)`` and checks
the claims; it does not unpack the summaries itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pytest_genai.results.measurement import Measurement, Result
from pytest_genai.train import metrics

if TYPE_CHECKING:
    from pytest_genai.stats import Interval
    from pytest_genai.devices.device import Device
    from pytest_genai.train.bare_ddp import BareRun
    from pytest_genai.train.config import ThroughputConfig
    from pytest_genai.train.planner import MemoryEstimate, Plan
    from pytest_genai.train.run import RunSummary

MEASURED, MODELED = "measured", "modeled"

NO_DDP_COMPARISON = "none: the planner says DDP does not fit (or the capacity is unknown)"


def _m(value: float, source: str = MEASURED, interval: Interval | None = None, rounds: Any = None) -> Measurement:
    return Measurement(value, source=source, interval=interval, rounds=None if rounds is None else tuple(rounds))


def training_mfu(achieved: float, cfg: ThroughputConfig, device: Device, *, world: int,
                 threads_per_rank: int) -> float | None:
    """Model FLOPs utilization of a run's ``achieved`` TFLOP/s against the device spec's peak for its precision
    (None when the peak is unknown). The CPU's peak was measured with ``spec.threads`` threads; the job used
    ``world`` ranks (over every node: ``achieved`` is the whole job's) x ``threads_per_rank``,
    so the peak is scaled per thread (None when the probe's threads are unknown). Other devices: the peak of one
    device x ``world`` devices. The precision is the one the run computes in (:func:`~pytest_genai.train.lora.
    run_precision`: bf16 on Gaudi and for a LoRA base on accelerators, whatever the config says)."""
    from pytest_genai.train.lora import run_precision

    dtype = "fp32" if run_precision(cfg.precision, cfg.lora is not None, device.kind) == "fp32" else "bf16"
    spec = device.spec
    peak = spec.peak_tflops(dtype) if spec else None
    if not peak:
        return None
    if device.kind == "cpu":
        return metrics.mfu(achieved, peak / spec.threads, world * threads_per_rank) if spec.threads else None
    return metrics.mfu(achieved, peak, world)


def throughput_result(summary: RunSummary, cfg: ThroughputConfig, device: Device, *, world: int,
                      estimate: MemoryEstimate, fit: Plan | None, counted_flops: int) -> Result:
    """One throughput run: how it ran (attention implementation, memory measure, method, dtypes, the Gaudi Flash
    Attention route), throughput, step and launch time, first and last loss, the analytic FLOPs per step (what LoRA
    runs) and torch's flop count over it (``counted_flops``), achieved TFLOP/s and MFU (when the device's peak is
    known), and the measured per-rank peak against the fit planner's ``estimate`` (attached with its terms and
    tolerance, and ``fit``'s recommendation when the capacity is known)."""
    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.flops import training_flops_per_step
    from pytest_genai.train.planner import PLANNER_TOLERANCE

    extra = summary.extra
    labels = {"attention": summary.attention_impl or "", "memory_measure": summary.memory_measure,
              "method": cfg.method}
    for key in ("flash_attention_route", "flash_attention_caveat"):  # Gaudi: how FA on/off reached the model
        if extra.get(key):
            labels[key] = extra[key]
    labels["base_dtype"] = extra.get("base_dtype", "float32")
    for key in ("hpu_mode", "init"):  # the Gaudi execution mode and the model build the ranks really ran
        if extra.get(key):
            labels[key] = extra[key]
    out: dict[str, Any] = {}
    if cfg.lora is not None:
        labels["adapter_dtype"] = extra.get("adapter_dtype") or ""
        out["trainable_params"] = _m(extra["trainable_params"])
    flops = training_flops_per_step(get_arch(cfg.model, cfg.scale), cfg.seq_len, summary.global_batch, lora=cfg.lora)
    achieved = metrics.achieved_tflops(flops, summary.median_step_s)
    steps = summary.timed_step_s
    out.update({
        # every timed step's figures as a round: the gate and a generation claim are judged on their interval
        **_step_rounds(summary),
        "launch_wall_s": _m(summary.wall_s),
        "loss_start": _m(summary.losses[0]),
        "loss_end": _m(summary.losses[-1]),
        "flops_per_step_modeled": _m(flops, MODELED),
        # two counts of the model's work (FlopCounterMode on the meta device, the analytic formula), no timing
        "flop_counter_ratio_modeled": _m(counted_flops / flops, MODELED),
        "achieved_tflops": _m(achieved, rounds=[metrics.achieved_tflops(flops, t) for t in steps]),
    })
    mfu = training_mfu(achieved, cfg, device, world=world,
                       threads_per_rank=int(extra.get("threads", 1)))
    if mfu is not None:  # MFU is achieved over a fixed peak: each step's is the median's scaled by its speed
        out["mfu"] = _m(mfu, rounds=[mfu * summary.median_step_s / t for t in steps])
    # the device's fixed overheads (CUDA: the BLAS workspaces), measured by each rank before its peak, are in the
    # allocator's peak but in no model of the run's tensors: the prediction adds them, each part with its source
    overhead = extra.get("fixed_overhead_bytes")
    predicted = estimate.total + (overhead or 0)
    out.update({
        "peak_tensor_bytes": _m(summary.max_peak_memory_bytes),
        "peak_tensor_bytes_predicted": _m(estimate.total, MODELED),
        "peak_tensor_bytes_over_predicted": _m(summary.max_peak_memory_bytes / predicted, MODELED),
    })
    if overhead is not None:
        out["device_fixed_overhead_bytes"] = _m(overhead)
    attachments = {
        "planner": {**estimate.as_dict(), "tolerance": PLANNER_TOLERANCE[cfg.strategy],
                    "recommended": None if fit is None else fit.recommended,
                    "reason": None if fit is None else fit.reason},
        "per_rank_peak_bytes": list(summary.peak_memory_bytes),
    }
    return Result(out, labels, attachments)


def _over_launches(runs: Sequence[RunSummary], bases: Sequence[RunSummary], name: str, *, run_is_slow: bool,
                   order: Sequence[str]) -> Result:
    """``name``: the fast side's tokens/s over the slow side's, the configuration under test (``runs``) and its
    baseline (``bases``) each launched several times, interleaved in ``order``
    (:mod:`pytest_genai.train.launches`): the ratio of their mean job medians with the two-stage interval over
    launches; every job's tokens/s attached per side, in launch order."""
    from pytest_genai.train.launches import compare_launches

    slow, fast = (runs, bases) if run_is_slow else (bases, runs)
    comparison = compare_launches([r.timed_step_s for r in slow], [r.timed_step_s for r in fast])
    attachments = {"launches": {"order": list(order), "run_tokens_per_s": [r.tokens_per_s for r in runs],
                                "baseline_tokens_per_s": [r.tokens_per_s for r in bases]}}
    return Result({name: _m(comparison.ratio, interval=comparison.interval)},
                  {"launches": f"{len(runs)} and {len(bases)} (baseline), interleaved"}, attachments)


def ddp_comparison_result(sharded: Sequence[RunSummary], ddp: Sequence[RunSummary] | None,
                          order: Sequence[str] = ()) -> Result:
    """DDP's tokens/s over a sharded strategy's (ZeRO-3, FSDP) on the same model, each launched several times,
    interleaved (``order``; :func:`_over_launches`). ``ddp`` None (the planner says DDP does not fit, or the
    capacity is unknown): a label says so."""
    if ddp is None:
        return Result({}, {"ddp_comparison": NO_DDP_COMPARISON})
    return _over_launches(sharded, ddp, "throughput_ratio_ddp_over_sharded", run_is_slow=True, order=order)


def flash_attention_result(fused: Sequence[RunSummary], unfused: Sequence[RunSummary] | None,
                           unfit_reason: str = "", order: Sequence[str] = ()) -> Result:
    """Fused attention's tokens/s over unfused attention's, same config, each launched several times, interleaved
    (``order``; :func:`_over_launches`). ``unfused`` None (unfused attention does not fit, ``unfit_reason`` says
    why): a label."""
    if unfused is None:
        return Result({}, {"attention_comparison": f"none: unfused attention does not fit ({unfit_reason})"})
    return _over_launches(fused, unfused, "flash_attention_speedup", run_is_slow=False, order=order)


def launcher_vs_bare_result(suite: Sequence[RunSummary], bare: Sequence[BareRun], warmup: int) -> Result:
    """The suite's launcher + worker against the bare torchrun script, launched alternately (bare, suite, ...,
    bare; :func:`pytest_genai.train.bare_ddp.launcher_vs_bare`): the steady-state throughput ratio with its
    interval, both sides' step times (mean of their jobs' medians) and launch wall times (means); every job's median
    step and wall time are attached in launch order, and the threads per rank of each side labeled."""
    import statistics

    from pytest_genai.train.bare_ddp import launcher_vs_bare

    comparison = launcher_vs_bare([s.step_s for s in suite], [b.step_s for b in bare], warmup)
    out = {
        "throughput_ratio_launcher_vs_bare": _m(comparison.ratio, interval=comparison.interval),
        "step_time_s": _m(statistics.fmean(comparison.suite_step_s)),
        "bare_step_time_s": _m(statistics.fmean(comparison.bare_step_s)),
        "launch_wall_s": _m(statistics.fmean(s.wall_s for s in suite)),
        "bare_launch_wall_s": _m(statistics.fmean(b.wall_s for b in bare)),
    }
    attachments = {"jobs": {"order": "bare, suite, ..., bare",
                            "suite_step_s": list(comparison.suite_step_s), "bare_step_s": list(comparison.bare_step_s),
                            "suite_launch_wall_s": [s.wall_s for s in suite],
                            "bare_launch_wall_s": [b.wall_s for b in bare]}}
    labels = {"threads_per_rank": f"suite {suite[0].extra.get('threads')}, bare {bare[0].threads}"}
    return Result(out, labels, attachments)


def wikitext_result(summary: RunSummary) -> Result:
    """The WikiText fine-tune: held-out loss before and after and its relative drop, throughput, step and launch
    time, first and last training loss."""
    start, end = summary.extra["eval_loss_start"], summary.extra["eval_loss_end"]
    return Result({
        "eval_loss_start": _m(start),
        "eval_loss_end": _m(end),
        "eval_loss_drop": _m(metrics.loss_drop(start, end)),
        **_step_rounds(summary, samples=False),
        "loss_start": _m(summary.losses[0]),
        "loss_end": _m(summary.losses[-1]),
        "launch_wall_s": _m(summary.wall_s),
    })


def _step_rounds(summary: RunSummary, samples: bool = True) -> dict[str, Measurement]:
    """Throughput and step time of a run, each with every timed step's value as its rounds (the medians are the
    summary's: the same steps)."""
    steps = summary.timed_step_s
    out = {"tokens_per_s": _m(summary.tokens_per_s, rounds=[summary.global_batch * summary.seq_len / t for t in steps])}
    if samples:
        out["samples_per_s"] = _m(summary.samples_per_s, rounds=[summary.global_batch / t for t in steps])
    out["step_time_s"] = _m(summary.median_step_s, rounds=steps)
    return out
