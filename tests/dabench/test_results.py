"""What the Level 1 benchmarks record (pytest_genai.dabench.results): every metric name and its source pinned per
benchmark, the labels and attachments, and the branches (CPU or not, budget or not, the bound estimated or not, a
capacity judged or not, an IPU run that failed); every metric is registered and its source is one the recorder
accepts. The vendor profiles are the fixtures' compile reports and section reports, or a synthetic PopVision
profile: no chip, no SDK."""
import dataclasses

import pytest

from . import vendor_fixtures
from pytest_genai.dabench import level1
from pytest_genai.dabench.capacity import (CapacitySearch, capacity_from_outcomes, predicted_max_layers,
                                           predicted_peak_bytes)
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.counts import stack_counts
from pytest_genai.dabench.overhead import PathVsBare
from pytest_genai.dabench.readers import DataflowProfile
from pytest_genai.dabench.readers.cerebras import parse_compile_report
from pytest_genai.dabench.readers.sambanova import parse_section_report
from pytest_genai.dabench.results import (WORK_COUNTS, capacity_result, ipu_run_result, level1_result,
                                          profile_result, rdu_level1_result, timer_overhead_result,
                                          timer_vs_bare_result, wse_capacity_result, wse_level1_result)
from pytest_genai.dabench.roofline import Ceilings
from pytest_genai.dabench.vendor import VendorRun
from pytest_genai.plugin.recorder import result_problems

CFG = DecoderConfig(layers=2, hidden=64, heads=1, seq_len=32)
MEASURED_CEILINGS, SPEC_CEILINGS = Ceilings(1.0, 100.0, "measured"), Ceilings(2.0, 50.0, "spec")
MEAS = level1.Measurements(step_s=1e-3, layer_s=(4e-4, 5e-4),
                           class_s={"matmul": 2e-4, "attention": 1e-4, "elementwise": 1e-4},
                           allocation=level1.Allocation(0.5, "test counter"))

CAPACITY = {"max_layers": "measured", "capacity_probes": "measured", "peak_tensor_bytes": "measured",
            "peak_bytes_modeled": "modeled", "memory_budget_bytes": "config", "max_layers_modeled": "modeled",
            "max_layers_modeled_over_measured": "modeled"}
CEREBRAS_EXTRA = ("samples_per_s", "compute_samples_per_s", "transmission_samples_per_s", "compute_utilization",
                  "wafer_utilization_estimate", "kernels", "kernel_rows", "layer_kernels", "non_layer_kernels",
                  "layer_kernels_without_rate", "li_subtask_rows", "li_subtask_rows_without_rate", "missing_cells",
                  "kernel_active_pes_total", "layer_kernel_active_pes", "load_imbalance_all_layer_kernels")
SAMBANOVA_EXTRA = ("sections", "chips", "sections_without_latency",
                   "pmu_utilization_time_weighted", "ddr_total_bw_gbs_time_weighted", "ddr_total_bw_gbs_max",
                   "ddr_total_bytes", "total_latency_s")
PROFILE = {"allocation_ratio": "measured", "load_imbalance": "measured"}
# SambaTune sections: the allocation under the name of its statistic, the authors' (highest section) and the
# latency-weighted mean beside it
RDU_PROFILE = {"allocation_ratio_section_max": "measured", "allocation_ratio_latency_weighted": "measured",
               "load_imbalance": "measured"}
PROFILE_LABELS = {"allocation_source", "li_definition", "profile_source"}
BOUND = {"compute_bound_modeled": "modeled"}
RDU_BOUND = {"flops_modeled": "modeled", "arithmetic_intensity_modeled": "modeled", **BOUND}
IPU_RUN = {"compiled": "measured", "step_time_s": "measured", "flops": "measured", "bytes_moved_modeled": "modeled",
           "arithmetic_intensity_modeled": "modeled", "achieved_tflops": "measured"}
IPU_SPEC = {"ceiling_tflops_spec": "spec", "ceiling_gbs_spec": "spec", "compute_efficiency_spec": "spec"}


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


def values(result):
    return {name: m.value for name, m in result.metrics.items()}


def extra(vendor, names):
    return {f"{vendor}_{n}": "measured" for n in names}


def wse_profile(**kw):
    return parse_compile_report(vendor_fixtures.compile_report(4, **kw))


def rdu_profile():
    return parse_section_report(vendor_fixtures.section_report([
        ("0", "0", "Forward", "0.002", "40.0", "50%"), ("1", "0", "Backward", "0.004", "60.0", "20%")]))


def ipu_profile():
    return DataflowProfile(vendor="graphcore", source_format="PopVision profile.pop via libpva", allocation_ratio=0.75,
                           allocation_units="tiles with vertex state", load_imbalance=0.5,
                           li_definition="mean/max", li_subtasks="tiles (memory.total.excludingGaps)",
                           subtask_loads=(1.0, 0.0), extra={"num_ipus": 1.0, "tiles_used": 3.0})


# --- sweep, capacity, timer ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, None])
def test_level1_result_is_compose_with_its_sources_plus_tokens_per_s_and_labels(threads):
    composed = level1.compose(CFG, MEAS, MEASURED_CEILINGS, SPEC_CEILINGS)
    result = level1_result(CFG, MEAS, MEASURED_CEILINGS, SPEC_CEILINGS, ceiling_clock="fixed", cpu_threads=threads)
    assert not result_problems(result)
    assert sources(result) == {**composed.sources, "tokens_per_s": "measured"}
    assert values(result) == {**composed.metrics, "tokens_per_s": CFG.tokens / MEAS.step_s}
    assert list(result.metrics)[-1] == "tokens_per_s"
    cpu = {"cpu_threads": "1"} if threads else {}
    assert result.labels == {**composed.labels, "work_counts": WORK_COUNTS, "ceiling_clock": "fixed", **cpu}
    assert result.attachments == {}
    assert result.metrics["load_imbalance"].interval is None  # no layer rounds measured


def test_level1_result_gives_tokens_per_s_one_value_per_step_round():
    meas = dataclasses.replace(MEAS, step_rounds=(1e-3, 2e-3, 1e-3))
    tps = level1_result(CFG, meas, MEASURED_CEILINGS, None, ceiling_clock="fixed").metrics["tokens_per_s"]
    assert tps.rounds == pytest.approx((CFG.tokens / 1e-3, CFG.tokens / 2e-3, CFG.tokens / 1e-3))
    assert level1_result(CFG, MEAS, MEASURED_CEILINGS, None, ceiling_clock="fixed").metrics["tokens_per_s"].rounds is None


def test_level1_result_carries_the_li_interval_to_the_recorder():
    meas = dataclasses.replace(MEAS, layer_rounds=((4e-4,) * 5, (5e-4, 5.1e-4, 4.9e-4, 5e-4, 5e-4)))
    result = level1_result(CFG, meas, MEASURED_CEILINGS, None, ceiling_clock="fixed")
    li = result.metrics["load_imbalance"]
    assert li.interval == level1.compose(CFG, meas, MEASURED_CEILINGS, None).intervals["load_imbalance"]
    assert li.interval.lo <= li.value <= li.interval.hi


@pytest.mark.parametrize("budget", [256 * 2**20, None])
@pytest.mark.parametrize("peak", [12345, None])
def test_capacity_result_measured_against_the_memory_model(budget, peak):
    search = CapacitySearch(max_fitting=6, probes=((1, True), (2, True), (4, True), (8, False), (6, True), (7, False)),
                            hit_limit=False)
    result = capacity_result(CFG, search, peak, budget, foreach_optimizer=False)
    assert not result_problems(result)
    expected = {k: v for k, v in CAPACITY.items()
                if (peak is not None or k != "peak_tensor_bytes")
                and (budget is not None or k not in ("memory_budget_bytes", "max_layers_modeled",
                                                     "max_layers_modeled_over_measured"))}
    assert sources(result) == expected
    m = values(result)
    assert m["max_layers"] == 6 and m["capacity_probes"] == 6
    at_six = DecoderConfig(layers=6, hidden=64, heads=1, seq_len=32)
    assert m["peak_bytes_modeled"] == predicted_peak_bytes(at_six).total
    if budget is not None:
        modeled = predicted_max_layers(CFG, budget)
        assert m["max_layers_modeled"] == modeled and m["max_layers_modeled_over_measured"] == modeled / 6
    assert result.labels == {}
    assert result.attachments == {"capacity_probes": [{"layers": n, "ok": ok} for n, ok in search.probes]}


def test_foreach_optimizer_reaches_the_memory_model():
    search = CapacitySearch(max_fitting=3, probes=((1, True),), hit_limit=False)
    fused, plain = (values(capacity_result(CFG, search, None, None, foreach_optimizer=f))["peak_bytes_modeled"]
                    for f in (True, False))
    at_three = DecoderConfig(layers=3, hidden=64, heads=1, seq_len=32)
    assert (fused, plain) == (predicted_peak_bytes(at_three, foreach_optimizer=True).total,
                              predicted_peak_bytes(at_three).total)


def test_timer_results():
    overhead = timer_overhead_result(2e-6)
    assert not result_problems(overhead)
    assert sources(overhead) == {"timer_overhead_s": "measured"} and values(overhead) == {"timer_overhead_s": 2e-6}

    run = PathVsBare(steps=2, path_s=(1.0, 2.0, 1.0), bare_s=(0.9, 1.9, 1.0), reported_step_s=(0.5, 0.7, 0.6))
    result = timer_vs_bare_result(run, 1)
    assert not result_problems(result)
    assert sources(result) == dict.fromkeys(("throughput_ratio_timer_vs_bare", "step_time_s", "bare_step_time_s"),
                                            "measured")
    ratio = result.metrics["throughput_ratio_timer_vs_bare"]
    assert ratio.value == run.ratio and ratio.rounds == tuple(run.ratios)
    assert values(result)["step_time_s"] == 0.6 and values(result)["bare_step_time_s"] == run.bare_step_s
    # both step times carry their rounds, so the gate judges them on intervals
    assert result.metrics["step_time_s"].rounds == (0.5, 0.7, 0.6)
    assert result.metrics["bare_step_time_s"].rounds == (0.45, 0.95, 0.5)
    assert result.labels == {"cpu_threads": "1"}

    rounds = timer_overhead_result([3e-6, 1e-6, 2e-6, 2.5e-6])
    assert not result_problems(rounds)
    assert rounds.metrics["timer_overhead_s"].value == 2.25e-6
    assert rounds.metrics["timer_overhead_s"].rounds == (3e-6, 1e-6, 2e-6, 2.5e-6)
    assert timer_overhead_result([4e-6]).metrics["timer_overhead_s"].rounds is None  # one round: no interval
    with pytest.raises(ValueError, match="no rounds"):
        timer_overhead_result([])


# --- dataflow chips ------------------------------------------------------------------------------------------------


def test_profile_result_names_every_field_by_vendor():
    profile = wse_profile()
    result = profile_result(profile)
    assert not result_problems(result)
    assert sources(result) == {**PROFILE, **extra("cerebras", CEREBRAS_EXTRA[:2] + CEREBRAS_EXTRA[3:])}
    assert values(result)["cerebras_compute_samples_per_s"] == 812.5
    assert result.labels == {"allocation_source": f"{profile.source_format}: {profile.allocation_units}",
                             "li_definition": f"{profile.li_definition} over {profile.li_subtasks}",
                             "profile_source": profile.source_format}


def test_profile_without_allocation_records_neither_it_nor_its_label():
    result = profile_result(wse_profile(active_pes="--"))
    assert "allocation_ratio" not in result.metrics and "allocation_source" not in result.labels
    assert result.labels["allocation_not_judged"].startswith("no allocation_ratio: the compile_report.txt")
    assert "load_imbalance" in result.metrics and "li_definition" in result.labels


@pytest.mark.parametrize("transmission", [True, False])
def test_wse_level1_bound_only_when_the_compiler_estimated_both_rates(transmission):
    result = wse_level1_result(wse_profile(overall_dashes=not transmission))
    assert not result_problems(result)
    names = CEREBRAS_EXTRA if transmission else CEREBRAS_EXTRA[:2] + CEREBRAS_EXTRA[3:]
    assert sources(result) == {**PROFILE, **extra("cerebras", names), **(BOUND if transmission else {})}
    assert set(result.labels) == PROFILE_LABELS | ({"bound_source"} if transmission else set())
    if transmission:  # 812.5 compute samples/s <= 900 transmission: compute is the slower
        assert values(result)["compute_bound_modeled"] == 1.0
        assert "Compute Samples/s 812.5 vs Transmission Samples/s 900" in result.labels["bound_source"]


@pytest.mark.parametrize("peak", [300.0, None])
def test_rdu_level1_bound_against_the_runs_own_ddr_ridge(peak):
    profile = rdu_profile()
    result = rdu_level1_result(profile, CFG, peak)
    assert not result_problems(result)
    assert sources(result) == {**RDU_PROFILE, **extra("sambanova", SAMBANOVA_EXTRA), **(RDU_BOUND if peak else {})}
    assert values(result)["allocation_ratio_section_max"] == pytest.approx(0.5)
    assert values(result)["allocation_ratio_latency_weighted"] == pytest.approx((0.002 * 0.5 + 0.004 * 0.2) / 0.006)
    assert set(result.labels) == PROFILE_LABELS | ({"bound_source"} if peak else set())
    if peak:
        flops = stack_counts(CFG).flops
        intensity = flops / profile.extra["ddr_total_bytes"]
        assert values(result)["flops_modeled"] == flops
        assert values(result)["arithmetic_intensity_modeled"] == pytest.approx(intensity)
        ridge = peak * 1e12 / (60.0 * 1e9)  # the highest section DDR bandwidth of the run
        assert values(result)["compute_bound_modeled"] == (1.0 if intensity >= ridge else 0.0)
        assert f"ridge {ridge:.4g} FLOP/B" in result.labels["bound_source"]


def test_a_two_chip_section_report_is_judged_against_two_chips_peak():
    """Two RDUs: each section's DDR bandwidth is summed over the chips, so the ridge is two chips' peak over it, and
    the bytes are each chip's bandwidth over its own latency (a chip that finished early moved fewer)."""
    profile = parse_section_report(vendor_fixtures.section_report([
        ("0", "0", "Forward", "0.004", "100.0", "50%"), ("0", "1", "Forward", "0.002", "100.0", "50%"),
        ("1", "0", "Backward", "0.004", "100.0", "20%"), ("1", "1", "Backward", "0.004", "100.0", "20%")]))
    assert profile.extra["chips"] == 2 and profile.extra["ddr_total_bw_gbs_max"] == 200
    assert profile.extra["ddr_total_bytes"] == pytest.approx((100 * 0.004 + 100 * 0.002 + 2 * 100 * 0.004) * 1e9)
    result = rdu_level1_result(profile, CFG, 688.0)
    ridge = 2 * 688.0 * 1e12 / (200 * 1e9)
    intensity = stack_counts(CFG).flops / profile.extra["ddr_total_bytes"]
    assert values(result)["compute_bound_modeled"] == (1.0 if intensity >= ridge else 0.0)
    assert f"ridge {ridge:.4g} FLOP/B = 2 chip(s) x 688 TFLOP/s" in result.labels["bound_source"]


CAPACITY_WSE = {"max_layers": "measured", "capacity_probes": "measured"}


def test_wse_capacity_judged_when_a_larger_count_failed():
    outcome = capacity_from_outcomes({8: None, 32: None, 64: None, 72: None, 76: "out_of_memory: does not fit"})
    result = wse_capacity_result(outcome, wse_profile())
    assert not result_problems(result)
    assert sources(result) == {**CAPACITY_WSE, **PROFILE, **extra("cerebras", CEREBRAS_EXTRA[:2] + CEREBRAS_EXTRA[3:]),
                               "first_failing_layers": "measured"}
    assert values(result)["max_layers"] == 72 and values(result)["first_failing_layers"] == 76
    assert values(result)["capacity_probes"] == 5
    assert result.labels["capacity_failure"] == "out_of_memory: does not fit"
    assert set(result.labels) == PROFILE_LABELS | {"capacity_failure"}
    assert result.attachments == {"capacity_attempts": [{"layers": n, "compiled": ok, "failure": why}
                                                        for n, ok, why in outcome.attempts]}


def test_wse_capacity_not_judged_without_a_larger_failure_and_notes_a_non_monotone_sweep():
    outcome = capacity_from_outcomes({8: "compile_failed: x", 32: None})
    result = wse_capacity_result(outcome, None)
    assert not result_problems(result)
    assert sources(result) == CAPACITY_WSE  # no profile given, no failure above 32
    assert list(result.labels) == ["capacity_note"]
    assert result.labels["capacity_note"].startswith("no count above 32 failed in the sweep")

    outcome = capacity_from_outcomes({8: "compile_failed: x", 32: None, 40: "out_of_memory: y"})
    result = wse_capacity_result(outcome, None)
    assert result.labels == {"capacity_note": "a smaller layer count failed below the largest that compiled",
                             "capacity_failure": "out_of_memory: y"}
    assert "first_failing_layers" in result.metrics


def test_wse_capacity_with_nothing_compiled():
    result = wse_capacity_result(capacity_from_outcomes({8: "out_of_memory: z"}), None)
    assert values(result) == {"max_layers": 0, "capacity_probes": 1, "first_failing_layers": 8}


@pytest.mark.parametrize("spec", [Ceilings(250.0, 65000.0, "spec"), None])
@pytest.mark.parametrize("profile", [ipu_profile(), None])
def test_ipu_run_result(spec, profile):
    run = VendorRun(step_s=0.01, profile_file=None)
    result = ipu_run_result(CFG, run, spec, profile)
    assert not result_problems(result)
    graphcore = {**PROFILE, **extra("graphcore", ("num_ipus", "tiles_used"))} if profile else {}
    assert sources(result) == {**IPU_RUN, **(IPU_SPEC if spec else {}), **graphcore}
    work = stack_counts(CFG)
    m = values(result)
    assert m["compiled"] == 1 and m["flops"] == work.flops and m["bytes_moved_modeled"] == work.bytes
    assert m["achieved_tflops"] == work.flops / 0.01 / 1e12
    if spec:
        assert m["compute_efficiency_spec"] == work.flops / 0.01 / spec.flops_per_s
    assert set(result.labels) == (PROFILE_LABELS if profile else set())


def test_ipu_run_that_did_not_fit_is_a_capacity_result():
    run = VendorRun(step_s=None, profile_file=None, failure="out_of_memory: tile memory exceeded")
    result = ipu_run_result(CFG, run, Ceilings(250.0, 65000.0, "spec"), None)
    assert not result_problems(result)
    assert sources(result) == {"compiled": "measured"} and values(result) == {"compiled": 0}
    assert result.labels == {"capacity_failure": "out_of_memory: tile memory exceeded"}


def test_the_op_class_times_carry_their_interleaved_rounds():
    """Each op class is timed in interleaved rounds; the gate can judge a class time on an interval only if the
    rounds reach the JSON (they were reduced to a median, so two runs compared two numbers). The achieved rate's
    rounds are the class's FLOPs over each round."""
    import dataclasses

    rounds = {"matmul": (2e-4, 2.2e-4, 1.9e-4), "attention": (1e-4, 1.1e-4, 0.9e-4)}
    meas = dataclasses.replace(MEAS, class_rounds=rounds)
    metrics = level1_result(CFG, meas, MEASURED_CEILINGS, None, ceiling_clock="test").metrics
    assert metrics["matmul_time_s"].rounds == rounds["matmul"]
    flops = metrics["matmul_flops"].value
    assert metrics["matmul_achieved_tflops"].rounds == pytest.approx(tuple(flops / t / 1e12 for t in rounds["matmul"]))
    assert metrics["attention_time_s"].rounds == rounds["attention"]
    gbs = [metrics["matmul_bytes_moved_modeled"].value / t / 1e9 for t in rounds["matmul"]]
    assert metrics["matmul_achieved_gbs_modeled"].rounds == pytest.approx(tuple(gbs))
    assert len(metrics["matmul_efficiency_modeled"].rounds) == 3
    assert metrics["elementwise_time_s"].rounds is None  # no rounds given: a point, as before
    assert metrics["matmul_bytes_moved_modeled"].rounds is None  # a count, not a measurement
    assert not result_problems(level1_result(CFG, meas, MEASURED_CEILINGS, None, ceiling_clock="test"))
