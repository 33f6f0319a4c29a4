"""What the Level 1 benchmarks record: each test's summary as a :class:`~pytest_genai.results.measurement.Result` (pure).

One function per benchmark: the sweep's roofline (:func:`~pytest_genai.dabench.level1.compose`) with the step's
tokens/s and how the work and ceilings were counted; the capacity search against the memory model; the timer's
own cost; and the dataflow chips' vendor profiles (allocation, load imbalance, the format's other fields), the
bound the WSE compiler or the RDU's measured DDR traffic gives, the WSE capacity sweep, a PopTorch run on the
IPU and the IPU bound from the measured cycles of its execution profile. Every metric says its source
(``measured``, ``modeled``, ``spec``, ``config``; units are the metric registry's, ``claims/data/metrics_*.toml``).
The benchmark calls ``genai.record(result)``; which claims it checks follows from what the result holds.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING, Any, Sequence

from pytest_genai.dabench.balance import li_deepest_over_shallowest
from pytest_genai.dabench.capacity import (CapacityOutcome, CapacitySearch, min_failing_layers,
                                           predicted_max_layers, predicted_peak_bytes)
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.counts import stack_counts
from pytest_genai.dabench.level1 import Measurements, compose
from pytest_genai.dabench.overhead import PathVsBare
from pytest_genai.dabench.readers import DataflowProfile
from pytest_genai.dabench.readers.graphcore import ExecutionCycles
from pytest_genai.dabench.roofline import Ceilings, arithmetic_intensity, classify_bound
from pytest_genai.dabench.vendor import VendorRun
from pytest_genai.results.measurement import Measurement, Result, rounds_of

if TYPE_CHECKING:
    from pytest_genai.stats import Interval

MEASURED, MODELED, SPEC, CONFIG = "measured", "modeled", "spec", "config"

WORK_COUNTS = "analytic (pytest_genai.dabench.counts): matrix-product FLOPs, minimal bytes per op"


def _m(value: float, source: str = MEASURED, rounds: Any = None, interval: Interval | None = None) -> Measurement:
    return Measurement(value, source=source, rounds=None if rounds is None else tuple(rounds), interval=interval)


def _joined(*results: Result) -> Result:
    """The metrics, labels and attachments of ``results`` in order (a later one's name replaces an earlier one's)."""
    metrics: dict[str, Any] = {}
    labels: dict[str, str] = {}
    attachments: dict[str, Any] = {}
    for r in results:
        metrics.update(r.metrics)
        labels.update(r.labels)
        attachments.update(r.attachments)
    return Result(metrics, labels, attachments)


# --- Level 1 sweep, capacity, timer --------------------------------------------------------------------------------


def level1_result(cfg: DecoderConfig, meas: Measurements, measured: Ceilings, spec: Ceilings | None, *,
                  ceiling_clock: str, cpu_threads: int | None = None) -> Result:
    """One config of the sweep: :func:`~pytest_genai.dabench.level1.compose`'s metrics with their sources and its
    labels, then tokens/s of the step, how the work was counted, the clock the ceilings were read on and, on the
    CPU, the pinned thread count."""
    composed = compose(cfg, meas, measured, spec)
    metrics = {name: _m(value, composed.sources.get(name), composed.rounds.get(name), composed.intervals.get(name))
               for name, value in composed.metrics.items()}
    metrics["tokens_per_s"] = _m(cfg.tokens / meas.step_s,
                                 rounds=rounds_of(cfg.tokens / t for t in meas.step_rounds))
    labels = {**composed.labels, "work_counts": WORK_COUNTS, "ceiling_clock": ceiling_clock}
    if cpu_threads is not None:
        labels["cpu_threads"] = str(cpu_threads)
    return Result(metrics, labels)


def capacity_result(cfg: DecoderConfig, search: CapacitySearch, peak_bytes: int | None, budget: int | None, *,
                    foreach_optimizer: bool) -> Result:
    """The largest layer count that ran (``cfg`` but for its layers), the probes it took, the tensor high-water
    mark at that count when measured, the memory model's peak there and, under a ``budget``, the model's own
    largest count and its ratio to the measured one (what ``B1.capacity_model_agreement`` reads)."""
    at_max = dataclasses.replace(cfg, layers=search.max_fitting)
    metrics: dict[str, Any] = {"max_layers": _m(search.max_fitting), "capacity_probes": _m(len(search.probes))}
    if peak_bytes is not None:
        metrics["peak_tensor_bytes"] = _m(peak_bytes)
    metrics["peak_bytes_modeled"] = _m(predicted_peak_bytes(at_max, foreach_optimizer=foreach_optimizer).total,
                                       MODELED)
    if budget is not None:
        modeled = predicted_max_layers(cfg, budget, foreach_optimizer=foreach_optimizer)
        metrics["memory_budget_bytes"] = _m(budget, CONFIG)
        metrics["max_layers_modeled"] = _m(modeled, MODELED)
        metrics["max_layers_modeled_over_measured"] = _m(modeled / search.max_fitting, MODELED)
    probes = [{"layers": n, "ok": ok} for n, ok in search.probes]
    return Result(metrics, attachments={"capacity_probes": probes})


def timer_overhead_result(overhead_s: float | Sequence[float]) -> Result:
    """The seconds of an empty synchronized timed region: one median, or the median of several rounds' medians with
    the rounds (the gate then judges it on an interval)."""
    if isinstance(overhead_s, (int, float)):
        return Result({"timer_overhead_s": _m(overhead_s)})
    rounds = [float(x) for x in overhead_s]
    if not rounds:
        raise ValueError("timer_overhead_result: no rounds; pass every round's median seconds (or one value)")
    return Result({"timer_overhead_s": _m(statistics.median(rounds), rounds=rounds_of(rounds))})


def timer_vs_bare_result(run: PathVsBare, cpu_threads: int) -> Result:
    """The timer path's throughput over the bare loop's with every round's ratio (the timing claim's interval),
    the median step time the timer reported and the bare loop's step time, each with its rounds (the gate judges
    them on intervals), and the pinned thread count."""
    return Result({
        "throughput_ratio_timer_vs_bare": _m(run.ratio, rounds=run.ratios),
        "step_time_s": _m(statistics.median(run.reported_step_s), rounds=run.reported_step_s),
        "bare_step_time_s": _m(run.bare_step_s, rounds=[s / run.steps for s in run.bare_s]),
    }, {"cpu_threads": str(cpu_threads)})


# --- dataflow chips ------------------------------------------------------------------------------------------------


def profile_result(profile: DataflowProfile) -> Result:
    """A vendor profile: the allocation ratio and LI where the format states them (with what they were read from),
    every further field as ``<vendor>_<field>``, and the format.

    The allocation is recorded under a name that says its statistic where the format gives per-part figures
    (``allocation_ratio_section_max`` and ``allocation_ratio_latency_weighted`` for SambaTune sections;
    ``allocation_ratio`` where the format states one whole-chip figure). An LI the format's subtasks do not give is
    said so in ``li_not_judged``, an allocation it gives no figure for in ``allocation_not_judged``: never left out
    silently."""
    metrics: dict[str, Any] = {}
    labels: dict[str, str] = {}
    if profile.allocation_ratio is not None:
        metrics[profile.allocation_metric] = _m(profile.allocation_ratio)
        labels["allocation_source"] = f"{profile.source_format}: {profile.allocation_units}"
    else:
        labels["allocation_not_judged"] = (f"no {profile.allocation_metric}: the {profile.source_format} gives no "
                                           f"figure for it ({profile.allocation_units}: '--' or no cells)")
    for statistic, value in profile.other_allocations.items():
        metrics[f"allocation_ratio_{statistic}"] = _m(value)
    if profile.load_imbalance is not None:
        metrics["load_imbalance"] = _m(profile.load_imbalance)
        labels["li_definition"] = f"{profile.li_definition} over {profile.li_subtasks}"
    else:
        labels["li_not_judged"] = f"no load imbalance from this {profile.source_format}: subtasks {profile.li_subtasks}"
    for name, value in profile.extra.items():
        metrics[f"{profile.vendor}_{name}"] = _m(value)
    labels["profile_source"] = profile.source_format
    return Result(metrics, labels)


def wse_level1_result(profile: DataflowProfile) -> Result:
    """A WSE compile report: its profile and, when the compiler estimated both Compute and Transmission Samples/s,
    the bound (compute-bound when compute is the slower, i.e. has the fewer samples/s)."""
    out = profile_result(profile)
    compute, transmission = (profile.extra.get(k) for k in ("compute_samples_per_s", "transmission_samples_per_s"))
    if not (compute and transmission):
        return out
    return _joined(out, Result(
        {"compute_bound_modeled": _m(1.0 if compute <= transmission else 0.0, MODELED)},
        {"bound_source": f"Cerebras compiler estimate: Compute Samples/s {compute:g} vs Transmission "
                         f"Samples/s {transmission:g} (compute-bound when compute is the slower)"},
    ))


def rdu_level1_result(profile: DataflowProfile, cfg: DecoderConfig, peak_tflops: float | None) -> Result:
    """A SambaTune section report: its profile and, when it measured DDR traffic and the vendor's bf16 peak is
    known, the analytic FLOPs over the measured DDR bytes against the ridge of the report's chips' peak (one RDU's
    times the chips) over the highest section DDR bandwidth of the run (summed over those chips)."""
    out = profile_result(profile)
    ddr_bytes, ddr_gbs_max = profile.extra.get("ddr_total_bytes"), profile.extra.get("ddr_total_bw_gbs_max")
    if not (ddr_bytes and ddr_gbs_max and peak_tflops):
        return out
    chips = max(1, int(profile.extra.get("chips") or 1))
    flops = stack_counts(cfg).flops
    intensity = arithmetic_intensity(flops, ddr_bytes)
    ridge = chips * peak_tflops * 1e12 / (ddr_gbs_max * 1e9)
    return _joined(out, Result(
        {
            "flops_modeled": _m(flops, MODELED),
            "arithmetic_intensity_modeled": _m(intensity, MODELED),
            "compute_bound_modeled": _m(1.0 if classify_bound(intensity, ridge) == "compute" else 0.0, MODELED),
        },
        {"bound_source": f"analytic FLOPs / SambaTune measured DDR bytes, against the ridge {ridge:.4g} "
                         f"FLOP/B = {chips} chip(s) x {peak_tflops:g} TFLOP/s bf16 (vendor) / {ddr_gbs_max:.4g} GB/s "
                         "(highest section DDR bandwidth measured in this run, summed over the chips)"},
    ))


def wse_capacity_result(outcome: CapacityOutcome, profile: DataflowProfile | None) -> Result:
    """A WSE capacity sweep: the largest count that compiled, the attempts, that count's compile report
    (``profile``), a note when a smaller count failed or none above it did, and the first failing count with
    its failure (what ``B1.wse2_max_layers`` reads; absent when no larger count failed)."""
    metrics: dict[str, Any] = {"max_layers": _m(outcome.max_fitting), "capacity_probes": _m(len(outcome.attempts))}
    labels: dict[str, str] = {}
    attempts = [{"layers": n, "compiled": ok, "failure": why} for n, ok, why in outcome.attempts]
    out = Result(metrics, labels, {"capacity_attempts": attempts})
    if profile is not None:
        out = _joined(out, profile_result(profile))
    notes: dict[str, str] = {}
    if not outcome.monotone:
        notes["capacity_note"] = "a smaller layer count failed below the largest that compiled"
    if outcome.first_failing is None:
        notes["capacity_note"] = (f"no count above {outcome.max_fitting} failed in the sweep: the capacity is at "
                                  "least that, so the claim is not judged; add a larger count")
        return _joined(out, Result({}, notes))
    failures = {n: why for n, _, why in outcome.attempts}
    return _joined(out, Result({"first_failing_layers": _m(outcome.first_failing)},
                               {**notes, "capacity_failure": failures[outcome.first_failing]}))


def ipu_capacity_result(sweeps: dict[str, tuple[CapacityOutcome, Any]]) -> Result:
    """IPU capacity sweeps of several configs (``vendor.read_capacity_sweeps``): per config the largest layer count
    that compiled and the first that failed (an attachment); how many configs were swept and how many failed; and, when
    some config failed, ``min_failing_layers`` -- the smallest failing count over the configs, with that config and
    its failure (what ``B1.ipu_fails_at_10_layers`` reads; absent when no config failed)."""
    outcomes = {group: outcome for group, (outcome, _) in sweeps.items()}
    per_config = [{"config": group, "max_layers": o.max_fitting, "first_failing_layers": o.first_failing,
                   "monotone": o.monotone,
                   "attempts": [{"layers": n, "compiled": ok, "failure": why} for n, ok, why in o.attempts]}
                  for group, o in outcomes.items()]
    failing = [o for o in outcomes.values() if o.first_failing is not None]
    metrics: dict[str, Any] = {"capacity_configs": _m(len(outcomes), "config"),
                               "capacity_failing_configs": _m(len(failing), "config")}
    labels: dict[str, str] = {}
    found = min_failing_layers(outcomes)
    if found is None:
        labels["capacity_note"] = ("no config of the sweep failed: where some would fail is unknown, so the claim "
                                   "is not judged; add larger layer counts")
    else:
        layers, group = found
        metrics["min_failing_layers"] = _m(layers)
        failure = dict((n, why) for n, _, why in outcomes[group].attempts)[layers]
        labels.update(min_failing_config=group, capacity_failure=failure)
    return Result(metrics, labels, {"capacity_sweeps": per_config})


def rdu_compile_modes_result(sweeps: dict[str, dict[int, DataflowProfile]]) -> Result:
    """SambaTune LI per compile mode across layer counts (``vendor.read_compile_mode_sweeps``): per mode the LI at
    each count (an attachment) and its trend as a label; ``o3_li_deepest_over_shallowest`` (what
    ``B1.rdu_o3_balance_falls`` reads) when O3 has an LI at two or more counts."""
    curves = {mode: {n: p.load_imbalance for n, p in sorted(by_layers.items())} for mode, by_layers in sweeps.items()}
    extra = [{"compile_mode": mode, "layers": n, "load_imbalance": li,
              sweeps[mode][n].allocation_metric: sweeps[mode][n].allocation_ratio,
              **{f"allocation_ratio_{k}": v for k, v in sweeps[mode][n].other_allocations.items()}}
             for mode, curve in curves.items() for n, li in curve.items()]
    trend = "; ".join(f"{mode}: " + ", ".join(f"L{n} {li:.3g}" if li is not None else f"L{n} --"
                                               for n, li in curve.items()) for mode, curve in curves.items())
    metrics: dict[str, Any] = {}
    labels = {"li_by_compile_mode": trend}
    try:
        metrics["o3_li_deepest_over_shallowest"] = _m(li_deepest_over_shallowest(curves.get("o3", {})))
    except ValueError as exc:
        labels["o3_trend_not_judged"] = f"O3: {exc}"
    li_definitions = {f"{p.li_definition} over {p.li_subtasks}" for by_layers in sweeps.values()
                      for p in by_layers.values()}
    labels["li_definition"] = ", ".join(sorted(li_definitions))
    return Result(metrics, labels, {"compile_mode_sweep": extra})


def ipu_bound_result(cycles: ExecutionCycles) -> Result:
    """An IPU execution profile's measured cycles, summed over IPUs: on-tile compute, exchange, stream copies,
    waiting and other programs; the compute share of compute + data movement (overall and on the most
    compute-heavy IPU) and, when either was non-zero, the bound: compute-bound (1) when compute cycles are at least
    the data-movement cycles (exchange + stream copies), else 0."""
    metrics: dict[str, Any] = {
        "graphcore_compute_cycles_measured": _m(sum(cycles.compute)),
        "graphcore_exchange_cycles_measured": _m(sum(cycles.exchange)),
        "graphcore_stream_copy_cycles_measured": _m(sum(cycles.stream_copy)),
        "graphcore_wait_cycles_measured": _m(sum(cycles.wait)),
        "graphcore_other_cycles_measured": _m(sum(cycles.other)),
    }
    skipped = f", first of {cycles.runs_read + 1} runs skipped as warm-up" if cycles.runs_skipped else ""
    labels = {"bound_source": (
        "PopVision execution profile: OnTileExecute cycles vs DoExchange + GlobalExchange + StreamCopyMid cycles, "
        f"summed over {len(cycles.compute)} IPU(s) and {cycles.runs_read} run(s){skipped}; Sync, SyncAns and "
        "StreamCopyBegin/End are waiting, on neither side (compute-bound when compute >= data movement)")}
    if cycles.other_types:
        labels["execution_other_programs"] = ", ".join(cycles.other_types)
    if cycles.compute_bound is not None:
        metrics["compute_cycle_fraction_measured"] = _m(cycles.compute_cycle_fraction)
        metrics["compute_cycle_fraction_ipu_max_measured"] = _m(cycles.compute_cycle_fraction_ipu_max)
        metrics["compute_bound_measured"] = _m(1.0 if cycles.compute_bound else 0.0)
    return Result(metrics, labels)


def ipu_run_result(cfg: DecoderConfig, run: VendorRun, spec: Ceilings | None,
                   profile: DataflowProfile | None) -> Result:
    """A PopTorch run of ``cfg``: ``compiled`` 0 and the failure when it did not compile or fit (a capacity
    result); else its step time, the module's exact matrix-product FLOPs and modeled bytes, the achieved TFLOP/s,
    the datasheet ceilings and the efficiency against them (``spec``, when known) and its PopVision profile."""
    if run.failure is not None:
        return Result({"compiled": _m(0)}, {"capacity_failure": run.failure})
    work, step_s = stack_counts(cfg), run.step_s
    metrics: dict[str, Any] = {
        "compiled": _m(1),
        "step_time_s": _m(step_s),
        "flops": _m(work.flops),  # PopTorch compiles this very module: its exact matrix-product count
        "bytes_moved_modeled": _m(work.bytes, MODELED),
        "arithmetic_intensity_modeled": _m(work.flops / work.bytes, MODELED),
        "achieved_tflops": _m(work.flops / step_s / 1e12),
    }
    if spec is not None:
        metrics.update({
            "ceiling_tflops_spec": _m(spec.tflops, SPEC),
            "ceiling_gbs_spec": _m(spec.gbs, SPEC),
            "compute_efficiency_spec": _m(work.flops / step_s / spec.flops_per_s, SPEC),
        })
    out = Result(metrics)
    return out if profile is None else _joined(out, profile_result(profile))

