"""One DABench-LLM Level 1 measurement, end to end: the metrics a benchmark records for one config on one device.

:func:`measure` runs the torch work (step time, per-layer loads, op-class times, allocation counters);
:func:`compose` turns those measurements and the analytic counts into named metrics (pure), each tagged with its
source: ``measured`` for timings, counters and the exact matrix-product FLOPs of the module run (defined by the
config, cross-checked with FlopCounterMode) and what is derived from them; ``modeled`` for estimates and for
everything that rests on the minimal-traffic byte model (``bytes_moved_modeled``, ``arithmetic_intensity_modeled``,
``achieved_gbs_modeled``, ``efficiency_modeled``, ``compute_bound_modeled``, ``elementwise_flops_modeled``): the
device's real traffic includes re-reads and spills the model does not count.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_genai.dabench import counts as _counts
from pytest_genai.dabench.allocation import cpu_allocation_ratio, occupancy_ratio, sm_allocation_ratio
from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance, load_imbalance_interval
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.roofline import Ceilings, RooflinePoint

if TYPE_CHECKING:
    from pytest_genai.stats import Interval

MEASURED, MODELED, SPEC = "measured", "modeled", "spec"
CLASSES = ("matmul", "attention", "elementwise")
#: Shortest per-layer / per-op-class sample: faster work is repeated within a sample (see timing.time_each).
MIN_SAMPLE_S = 5e-3
#: Repeats of the per-layer loads (LI), at least this many whatever the step's repeats: the LI claim is judged on a
#: bootstrap over them, and fewer rounds leave its interval too wide to decide on an idle machine.
LAYER_REPEATS = 9
#: CPU utilization: windows of back-to-back steps (each at least one step), their median recorded with every window.
UTILIZATION_WINDOWS, UTILIZATION_WINDOW_S = 5, 0.04


@dataclasses.dataclass(frozen=True)
class Allocation:
    """A measured allocation ratio and the counter it came from."""

    ratio: float
    source: str  # e.g. "threads/cores", "cuda_kernels:grid_blocks/SMs"
    occupancy: float | None = None
    utilization: float | None = None  # CPU: process CPU time / (wall x cores), how busy the assigned cores were
    utilization_rounds: tuple[float, ...] = ()  # CPU: each timed window's utilization (utilization is their median)


@dataclasses.dataclass(frozen=True)
class Measurements:
    """What :func:`measure` timed on the device (seconds are medians)."""

    step_s: float
    layer_s: tuple[float, ...]  # per layer: median load on the load clock (see measure())
    class_s: Mapping[str, float]
    allocation: Allocation | None
    layer_clock: str = "wall"  # "wall" (synchronized) or "process_cpu" (CPU: seconds the process ran)
    layer_wall_s: tuple[float, ...] = ()  # CPU only: per-layer median wall times, for transparency
    # each op class's interleaved rounds (seconds): the gate judges the class times on an interval, not on two medians
    class_rounds: Mapping[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    # every layer's rounds on the load clock (layer_s are their medians): the LI's interval is drawn from them
    layer_rounds: tuple[tuple[float, ...], ...] = ()
    layer_wall_rounds: tuple[tuple[float, ...], ...] = ()  # CPU only: the rounds of layer_wall_s
    # the whole step's timed rounds (step_s is their median): the step's rates are judged on intervals from them
    step_rounds: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True)
class Level1Result:
    metrics: dict[str, float]
    sources: dict[str, str]
    labels: dict[str, str]
    rounds: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)  # per-round values, by metric
    intervals: dict[str, Interval] = dataclasses.field(default_factory=dict)  # computed otherwise, by metric


def _rate_rounds(prefix: str, flops: float, bytes_moved: float, seconds: tuple[float, ...], measured: Ceilings,
                 rounds: dict[str, tuple[float, ...]]) -> None:
    """The rounds of the time-derived figures of :func:`_roofline_metrics`, one value per timed round."""
    points = [RooflinePoint(flops, bytes_moved, t, measured) for t in seconds]
    rounds[prefix + ("time_s" if prefix else "step_time_s")] = tuple(seconds)
    rounds[prefix + "achieved_tflops"] = tuple(p.achieved_flops_per_s / 1e12 for p in points)
    rounds[prefix + "achieved_gbs_modeled"] = tuple(p.achieved_bytes_per_s / 1e9 for p in points)
    rounds[prefix + "efficiency_modeled"] = tuple(p.efficiency for p in points)


def _roofline_metrics(prefix: str, point: RooflinePoint, out: dict[str, float], src: dict[str, str]) -> None:
    def put(name: str, value: float, source: str) -> None:
        out[prefix + name] = float(value)
        src[prefix + name] = source

    put("flops", point.flops, MEASURED)
    put("time_s" if prefix else "step_time_s", point.seconds, MEASURED)
    put("achieved_tflops", point.achieved_flops_per_s / 1e12, MEASURED)
    # The bytes are a minimal-traffic model (each op reads its inputs once, no cache credited), not the traffic the
    # device did: they and everything derived from them are modeled, and their names say so.
    put("bytes_moved_modeled", point.bytes_moved, MODELED)
    put("arithmetic_intensity_modeled", point.intensity, MODELED)
    put("achieved_gbs_modeled", point.achieved_bytes_per_s / 1e9, MODELED)
    put("efficiency_modeled", point.efficiency, MODELED)
    put("compute_bound_modeled", 1.0 if point.bound == "compute" else 0.0, MODELED)


def time_step_on(device: Any, step: Callable[[], None], *, warmup: int = 1, repeats: int = 5) -> Any:
    """A step's rounds on ``device``: CUDA events after :data:`~pytest_genai.runtime.timing.EVENT_WARMUP` warm-up
    calls on CUDA (a small step's wall clock read its launch there), a synchronized clock elsewhere."""
    from pytest_genai.runtime.timing import EVENT_WARMUP, time_callable, time_cuda_events

    if device.kind == "cuda":
        return time_cuda_events(step, index=device.index, warmup=max(warmup, EVENT_WARMUP), repeats=repeats)
    return time_callable(step, sync=device.synchronize, warmup=warmup, repeats=repeats)


def step_over_layer_sum(step_s: float, layer_s: Sequence[float]) -> float:
    """A step's seconds over the sum of its layers' median seconds. A step runs every layer, so on one clock it is
    not shorter than their sum (>= 1 up to noise); well below 1, the step's timer missed work still queued."""
    total = sum(layer_s)
    if not layer_s or total <= 0 or step_s <= 0:
        raise ValueError(f"need a positive step time and layer times, got step {step_s} s, layers {list(layer_s)}")
    return step_s / total


def compose(
    cfg: DecoderConfig,
    meas: Measurements,
    measured: Ceilings,
    spec: Ceilings | None,
    *,
    li_definition: str = "mean_over_max",
) -> Level1Result:
    """Metrics of one config from its measurements, its analytic counts and the device's ceilings (pure)."""
    metrics: dict[str, float] = {}
    sources: dict[str, str] = {}
    labels: dict[str, str] = {}
    rounds: dict[str, tuple[float, ...]] = {}
    intervals: dict[str, Interval] = {}
    work = _counts.stack_counts(cfg)
    whole = RooflinePoint(work.flops, work.bytes, meas.step_s, measured)
    _roofline_metrics("", whole, metrics, sources)
    if len(meas.step_rounds) >= 2:  # every figure read off the step time, once per round
        _rate_rounds("", work.flops, work.bytes, meas.step_rounds, measured, rounds)
        rounds["ceiling_fraction_tflops"] = tuple(work.flops / t / measured.flops_per_s for t in meas.step_rounds)
    labels["bound"] = whole.bound
    metrics["elementwise_flops_modeled"] = float(work.nominal_flops)
    sources["elementwise_flops_modeled"] = MODELED
    metrics["ceiling_tflops_measured"] = measured.tflops
    metrics["ceiling_gbs_measured"] = measured.gbs
    metrics["ridge_point_measured"] = measured.ridge
    metrics["ceiling_fraction_tflops"] = whole.achieved_flops_per_s / measured.flops_per_s
    sources.update(dict.fromkeys(
        ("ceiling_tflops_measured", "ceiling_gbs_measured", "ridge_point_measured", "ceiling_fraction_tflops"),
        MEASURED,
    ))
    if spec is not None:
        # Datasheet ceilings (devices/data/specs.toml): source "spec", and so is the efficiency against them.
        metrics["ceiling_tflops_spec"] = spec.tflops
        metrics["ceiling_gbs_spec"] = spec.gbs
        metrics["efficiency_spec"] = RooflinePoint(work.flops, work.bytes, meas.step_s, spec).efficiency
        if len(meas.step_rounds) >= 2:
            rounds["efficiency_spec"] = tuple(RooflinePoint(work.flops, work.bytes, t, spec).efficiency
                                              for t in meas.step_rounds)
        sources.update(ceiling_tflops_spec=SPEC, ceiling_gbs_spec=SPEC, efficiency_spec=SPEC)
        labels["bound_spec"] = RooflinePoint(work.flops, work.bytes, meas.step_s, spec).bound

    per_class = _counts.class_counts(_counts.layer_forward_ops(cfg))
    for cls in CLASSES:
        seconds = meas.class_s.get(cls)
        if seconds is None or cls not in per_class:
            continue
        cw = per_class[cls]
        point = RooflinePoint(cw.flops, cw.bytes, seconds, measured)
        _roofline_metrics(f"{cls}_", point, metrics, sources)
        labels[f"{cls}_bound"] = point.bound
        samples = tuple(meas.class_rounds.get(cls, ()))
        if len(samples) >= 2:  # every figure read off the class's time, once per round
            _rate_rounds(f"{cls}_", cw.flops, cw.bytes, samples, measured, rounds)

    loads = list(meas.layer_s)
    metrics["load_imbalance"] = load_imbalance(loads, li_definition)
    if len(meas.layer_rounds) >= 2 and min(map(len, meas.layer_rounds)) >= 2:
        # LI is a statistic of medians, not a median of rounds: its interval redraws each layer's rounds, so a noisy
        # spell during one layer's rounds reads inconclusive against a bound instead of deciding it
        intervals["load_imbalance"] = load_imbalance_interval(meas.layer_rounds, li_definition)
    other = "min_over_max" if li_definition == "mean_over_max" else "mean_over_max"
    metrics[f"load_imbalance_{other}"] = load_imbalance(loads, other)
    if "load_imbalance" in intervals:
        intervals[f"load_imbalance_{other}"] = load_imbalance_interval(meas.layer_rounds, other)
    if meas.layer_wall_s:
        metrics["load_imbalance_wall"] = load_imbalance(list(meas.layer_wall_s), li_definition)
        if len(meas.layer_wall_rounds) >= 2 and min(map(len, meas.layer_wall_rounds)) >= 2:
            intervals["load_imbalance_wall"] = load_imbalance_interval(meas.layer_wall_rounds, li_definition)
        sources["load_imbalance_wall"] = MEASURED
    metrics["layer_time_max_s"] = max(loads)
    metrics["layer_time_mean_s"] = sum(loads) / len(loads)
    # the step against its own layers on the same (synchronized wall) clock: a step shorter than them timed its launch
    wall_layers = meas.layer_wall_s or (meas.layer_s if meas.layer_clock == "wall" else ())
    if wall_layers:
        metrics["step_over_layer_sum"] = step_over_layer_sum(meas.step_s, wall_layers)
        sources["step_over_layer_sum"] = MEASURED
        if len(meas.step_rounds) >= 2:
            rounds["step_over_layer_sum"] = tuple(step_over_layer_sum(t, wall_layers) for t in meas.step_rounds)
    if "load_imbalance" in intervals:  # statistics of the same medians: the same bootstrap over each layer's rounds
        from pytest_genai.stats import bootstrap_medians_interval

        intervals["layer_time_max_s"] = bootstrap_medians_interval(meas.layer_rounds, max,
                                                                   method="max of layer medians")
        intervals["layer_time_mean_s"] = bootstrap_medians_interval(
            meas.layer_rounds, lambda medians: sum(medians) / len(medians), method="mean of layer medians")
    sources.update(dict.fromkeys(
        ("load_imbalance", f"load_imbalance_{other}", "layer_time_max_s", "layer_time_mean_s"), MEASURED
    ))
    unit = "forward" if cfg.mode == "forward" else "forward+backward"
    clock = "process CPU" if meas.layer_clock == "process_cpu" else "synchronized wall"
    labels["li_definition"] = f"{LI_DEFINITIONS[li_definition]} over per-layer {unit} {clock} times (medians)"

    if meas.allocation is not None:
        metrics["allocation_ratio"] = meas.allocation.ratio
        sources["allocation_ratio"] = MEASURED
        labels["allocation_source"] = meas.allocation.source
        if meas.allocation.occupancy is not None:
            metrics["allocation_occupancy"] = meas.allocation.occupancy
            sources["allocation_occupancy"] = MEASURED
        if meas.allocation.utilization is not None:
            metrics["cpu_utilization"] = meas.allocation.utilization
            sources["cpu_utilization"] = MEASURED
            if len(meas.allocation.utilization_rounds) >= 2:
                rounds["cpu_utilization"] = tuple(meas.allocation.utilization_rounds)
    return Level1Result(metrics, sources, labels, rounds, intervals)


def measure(
    cfg: DecoderConfig,
    device: Any,
    *,
    time_step: Callable[[Callable[[], None]], float | Sequence[float]] | None = None,
    repeats: int = 5,
    warmup: int = 1,
) -> Measurements:
    """Build the stack on ``device`` and measure one config.

    ``time_step(step)`` times the whole step and returns every round's seconds (or only their median, which leaves
    the step's rates without rounds); the benchmark passes pytest-benchmark's pedantic loop there, with device
    synchronization; by default :func:`time_step_on` (CUDA events after warm-up on CUDA).
    Per-layer and per-op-class loads are timed interleaved (:func:`~pytest_genai.runtime.timing.time_each`).
    A layer's load for LI is its median time on the load clock: on accelerators the synchronized wall clock; on
    the CPU the process's CPU time (``time.process_time``), which counts the work the cores did for the layer and
    not the time the OS gave the cores to other processes, which on a shared machine set identical layers' wall-clock
    medians far apart. The wall-clock LI is reported beside it on the CPU.
    """
    import torch

    from pytest_genai.dabench import model
    from pytest_genai.runtime.threads import available_cores
    from pytest_genai.runtime.timing import cpu_times, time_callable, time_each

    torch_device = device.torch_device
    if torch_device is None:
        raise ValueError(f"device kind {device.kind!r} is not torch-addressable; use pytest_genai.dabench.vendor")
    stack = model.build_stack(cfg, torch_device)
    x = model.make_input(cfg, torch_device)
    step = model.make_step(cfg, stack, x)
    sync = device.synchronize
    if time_step is None:
        step_rounds = time_step_on(device, step, warmup=warmup, repeats=repeats).samples
    else:
        timed = time_step(step)
        step_rounds = (float(timed),) if isinstance(timed, (int, float)) else tuple(float(t) for t in timed)
    if not step_rounds:
        raise ValueError("time_step returned no rounds; return every round's seconds (or their median)")
    step_s = statistics.median(step_rounds)
    step_rounds = step_rounds if len(step_rounds) >= 2 else ()
    layer_fns = model.layer_steps(cfg, stack, x)
    layer_repeats = max(repeats, LAYER_REPEATS)
    # one call count for every layer: a layer whose warm-up caught a slow spell would otherwise get fewer calls per
    # sample, and so a larger share of the cold first call in each -- a bias in the very loads LI compares
    layer_t = time_each(layer_fns, sync=sync, warmup=warmup, repeats=layer_repeats, min_sample_s=MIN_SAMPLE_S,
                        same_calls=True)
    layer_cpu = None
    if device.kind == "cpu":
        layer_cpu = time_each(layer_fns, warmup=0, repeats=layer_repeats, clock=time.process_time,
                              min_sample_s=MIN_SAMPLE_S, same_calls=True)
    class_steps = model.op_class_steps(stack.blocks[0], x)
    class_t = time_each(list(class_steps.values()), sync=sync, warmup=warmup, repeats=repeats,
                        min_sample_s=MIN_SAMPLE_S)
    class_s = {name: t.median_s for name, t in zip(class_steps, class_t)}
    class_rounds = {name: t.samples for name, t in zip(class_steps, class_t)}

    allocation = None
    if device.kind == "cpu":
        # Allocation, as a compiler's unit assignment: the threads given to the run over the cores it may use.
        # How busy they were is utilisation, recorded under its own name (a 1-thread busy loop reads 1/cores).
        cores = available_cores()
        # five windows of 0.04 s: rounds the gate can judge an interval on, in the time one 0.2 s window takes
        # for steps under 0.04 s (each window runs at least one step, so a longer step costs up to 5 steps here)
        windows = [cpu_times(step, min_wall_s=UTILIZATION_WINDOW_S) for _ in range(UTILIZATION_WINDOWS)]
        busy = tuple(cpu_allocation_ratio(ct.cpu_s, ct.wall_s, cores) for ct in windows)
        threads = min(torch.get_num_threads(), cores)
        allocation = Allocation(threads / cores, f"threads given to the run / cores available ({threads}/{cores})",
                                utilization=statistics.median(busy), utilization_rounds=busy)
    elif device.kind == "cuda":
        from pytest_genai.dabench.kernels import profile_kernels

        sms = torch.cuda.get_device_properties(device.index).multi_processor_count
        kernels = profile_kernels(step, device)
        ratio = sm_allocation_ratio(kernels, sms)
        if ratio is not None:
            allocation = Allocation(ratio, f"cuda kernels: time-weighted min(1, grid blocks/{sms} SMs)",
                                    occupancy_ratio(kernels))
    del stack, step
    if layer_cpu is None:
        return Measurements(step_s, tuple(t.median_s for t in layer_t), class_s, allocation,
                            class_rounds=class_rounds, layer_rounds=tuple(t.samples for t in layer_t),
                            step_rounds=step_rounds)
    return Measurements(
        step_s,
        tuple(t.median_s for t in layer_cpu),
        class_s,
        allocation,
        layer_clock="process_cpu",
        layer_wall_s=tuple(t.median_s for t in layer_t),
        layer_wall_rounds=tuple(t.samples for t in layer_t),
        class_rounds=class_rounds,
        layer_rounds=tuple(t.samples for t in layer_cpu),
        step_rounds=step_rounds,
    )
