"""What the fine-tuning benchmarks record: each run's summary as a :class:`~pytest_genai.record.Result` (pure).

One function per benchmark turns what the runs returned into named metrics, each with its source (``measured`` for
timings, losses, memory and what is derived from them; ``modeled`` for the analytic FLOPs and the fit planner's
prediction; units are the metric registry's, ``claims/data/metrics_*.toml``), labels saying how a number was
obtained and attachments (the planner's terms, per-rank peaks, the bracketing baseline runs). The comparisons that
need extra runs (DDP against a sharded strategy, fused against unfused attention) are separate builders taking the
bracketing runs' summaries. ``benchmarks/test_finetune.py`` runs the jobs, calls ``genai.record(result)`` and checks
the claims; it does not unpack the summaries itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pytest_genai.record import Measurement, Result
from pytest_genai.train import metrics

if TYPE_CHECKING:
    from pytest_genai.claims.stats import Interval
    from pytest_genai.devices.device import Device
    from pytest_genai.train.bare_ddp import BareRun
    from pytest_genai.train.config import ThroughputConfig
    from pytest_genai.train.planner import MemoryEstimate, Plan
    from pytest_genai.train.run import RunSummary

MEASURED, MODELED = "measured", "modeled"

NO_DDP_COMPARISON = "none: the planner says DDP does not fit (or the capacity is unknown)"


def _m(value: float, source: str = MEASURED, interval: Interval | None = None, rounds: Any = None) -> Measurement:
    return Measurement(value, source=source, interval=interval, rounds=None if rounds is None else tuple(rounds))


def speed_ratio_interval(slow_steps: Sequence[float], fast_steps: Sequence[float]) -> Interval:
    """95% interval of median(slow steps) / median(fast steps) (same global batch: the tokens/s ratio of the fast
    side over the slow one), by a seeded bootstrap over the timed steps of separate runs."""
    from pytest_genai.claims.stats import bootstrap_ratio_interval

    return bootstrap_ratio_interval(list(slow_steps), list(fast_steps))


def bracketed_interval(run_steps: Sequence[float], brackets: tuple[RunSummary, RunSummary], *,
                       run_is_slow: bool) -> Interval:
    """The speed ratio of one run against its bracketing baseline runs (just before, just after): the step bootstrap
    against each baseline run, joined. Pooling the two baselines' steps as one sample hid the drift between runs
    (a simulated 4% run-to-run spread: 28% coverage for a nominal 95%); here that drift widens the interval by the
    two baselines' difference. The run's own run-to-run deviation is still not seen: one run a side cannot show it."""
    from pytest_genai.claims.stats import Interval

    parts = [speed_ratio_interval(run_steps, b.timed_step_s) if run_is_slow
             else speed_ratio_interval(b.timed_step_s, run_steps) for b in brackets]
    return Interval(min(p.lo for p in parts), max(p.hi for p in parts), min(p.level for p in parts),
                    min(p.n for p in parts), "ratio of medians, percentile bootstrap against the baseline run before "
                    "and the one after, joined (drift between the runs widens it)")


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


def ddp_comparison_result(sharded: RunSummary, ddp_runs: tuple[RunSummary, RunSummary] | None) -> Result:
    """DDP's tokens/s over a sharded strategy's (ZeRO-3, FSDP) on the same model: the mean of the DDP runs just
    before and just after the sharded one, with the :func:`bracketed_interval`; both DDP rates are attached. ``ddp_runs`` None (the planner says DDP does not fit, or the capacity is unknown): a label says so."""
    if ddp_runs is None:
        return Result({}, {"ddp_comparison": NO_DDP_COMPARISON})
    before, after = ddp_runs
    ddp = (before.tokens_per_s, after.tokens_per_s)
    ratio = metrics.speedup(sum(ddp) / 2, sharded.tokens_per_s)
    interval = bracketed_interval(sharded.timed_step_s, ddp_runs, run_is_slow=True)
    return Result({"throughput_ratio_ddp_over_sharded": _m(ratio, interval=interval)}, {},
                  {"ddp_tokens_per_s_before_after": ddp})


def flash_attention_result(fused: RunSummary, unfused_runs: tuple[RunSummary, RunSummary] | None,
                           unfit_reason: str = "") -> Result:
    """Fused attention's tokens/s over unfused attention's, same config: against the mean of the unfused runs just
    before and just after the fused one, with the :func:`bracketed_interval`; both unfused rates are attached. ``unfused_runs`` None (unfused attention does not fit, ``unfit_reason`` says why): a label."""
    if unfused_runs is None:
        return Result({}, {"attention_comparison": f"none: unfused attention does not fit ({unfit_reason})"})
    before, after = unfused_runs
    unfused = (before.tokens_per_s, after.tokens_per_s)
    speedup = metrics.speedup(fused.tokens_per_s, sum(unfused) / 2)
    interval = bracketed_interval(fused.timed_step_s, unfused_runs, run_is_slow=False)
    return Result({"flash_attention_speedup": _m(speedup, interval=interval)}, {},
                  {"unfused_tokens_per_s_before_after": unfused})


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
