"""What the quantizer benchmarks record (pytest_genai.quant.results; pure, from synthetic timings, probes and a
hand-written plan, no model runs): every metric name and its source pinned, the label and attachment keys, the
per-round ratios, and every metric registered with a source the recorder accepts."""
import statistics

import pytest

from pytest_genai.quant.bench import MemoryProbe
from pytest_genai.quant.plan import PrecisionPlan
from pytest_genai.quant.results import bandwidth_fractions, quantizer_comparison_result, sensitivity_bandwidth_result
from pytest_genai.plugin.recorder import result_problems

COMPARISON = {name: "measured" for name in (
    "quantize_seconds", "quantize_seconds_torchao", "quantize_seconds_inc", "quantize_seconds_inc_packing",
    "quantize_seconds_inc_without_packing", "quantize_time_ratio_vs_inc_without_packing",
    "quantize_time_ratio_vs_torchao", "quantize_time_ratio_vs_inc", "model_fp32_bytes", "peak_rss_bytes",
    "peak_rss_growth_ratio", "quantize_extra_rss_ratio", "peak_rss_growth_ratio_torchao", "peak_rss_growth_ratio_inc",
    "compression_ratio", "compression_ratio_model", "compression_ratio_safetensors", "compression_ratio_torchao",
    "compression_ratio_inc", "compression_ratio_prediction_error", "mean_bits_per_weight", "sensitivity_threshold",
    "eligible_params")} | {"predicted_compression_ratio": "modeled"}
BANDWIDTH = {name: "measured" for name in ("sensitivity_read_gbs", "copy_gbs", "sensitivity_bandwidth_fraction",
                                           "sensitivity_seconds", "eligible_weight_bytes", "copy_gbs_session")}


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


def probe(quantizer, growth, compression=3.0):
    return MemoryProbe(quantizer=quantizer, arch="L1-V2048", model_fp32_bytes=1000, baseline_rss_bytes=500,
                       model_rss_bytes=1500, peak_rss_bytes=1500 + int(growth * 1000) - 1000,
                       peak_rss_growth_ratio=growth, quantize_extra_rss_ratio=growth - 1.0, quantize_seconds=1.0,
                       compression_ratio=compression, method="clear_refs + VmHWM")


MEMORY = {"pytest-genai": probe("pytest-genai", 1.1), "torchao": probe("torchao", 1.5, 3.9),
          "inc": probe("inc", 1.4, 3.8)}
PLAN = PrecisionPlan(formats={"a": "int8", "b": "bf16"}, shapes={"a": (8, 8), "b": (8, 8)}, tiers=("bf16", "int8"),
                     sensitivity="|w| above the global threshold", threshold=0.25, scores={"a": 0.1, "b": 0.5})
REPORT = {"compression_ratio": 2.6, "compression_ratio_model": 2.5, "compression_ratio_safetensors": 2.55,
          "compression_ratio_prediction_error": 0.0, "mean_bits_per_weight": 12.0}
SECONDS = {"pytest-genai": [1.0, 2.0, 1.0], "torchao": [4.0, 5.0, 2.0], "inc": [2.0, 6.0, 3.0]}
PACKING = [1.0, 2.0, 1.0]
PACKING_T = tuple(PACKING)


def comparison(seconds=SECONDS, packing=PACKING):
    return quantizer_comparison_result(seconds, packing, MEMORY, PLAN, REPORT)


def test_comparison_pins_every_metric_source_label_and_attachment():
    result = comparison()
    assert sources(result) == COMPARISON
    assert result_problems(result) == []
    assert set(result.labels) == {"sensitivity", "peak_memory_method"}
    assert result.labels == {"sensitivity": PLAN.sensitivity, "peak_memory_method": "clear_refs + VmHWM"}
    assert set(result.attachments) == {"plan", "compression", "quantize_seconds_rounds", "memory"}
    assert result.attachments["plan"]["formats"] == PLAN.formats and result.attachments["plan"]["scores"] == PLAN.scores
    assert result.attachments["memory"]["torchao"]["peak_rss_growth_ratio"] == 1.5
    assert result.attachments["quantize_seconds_rounds"] is SECONDS


def test_comparison_values_are_medians_and_per_round_ratios():
    m = comparison().metrics
    assert m["quantize_seconds"].value == 1.0 and m["quantize_seconds_torchao"].value == 4.0
    assert m["quantize_seconds_inc"].value == 3.0 and m["quantize_seconds_inc_packing"].value == 1.0
    assert m["quantize_seconds_inc_without_packing"].value == 2.0  # per round: 1, 4, 2
    assert m["quantize_time_ratio_vs_inc_without_packing"].value == 0.5  # per round: 1/1, 2/4, 1/2
    assert m["quantize_time_ratio_vs_torchao"].value == 0.25  # medians 1 / 4
    assert m["quantize_time_ratio_vs_torchao"].rounds == (0.25, 0.4, 0.5)
    assert m["quantize_time_ratio_vs_inc"].rounds == (0.5, 2 / 6, 1 / 3)
    # each quantizer's seconds with its rounds: the gate judges them on intervals
    assert m["quantize_seconds"].rounds == (1.0, 2.0, 1.0) and m["quantize_seconds_torchao"].rounds == (4.0, 5.0, 2.0)
    assert m["quantize_seconds_inc"].rounds == (2.0, 6.0, 3.0) and m["quantize_seconds_inc_packing"].rounds == PACKING_T
    assert m["quantize_seconds_inc_without_packing"].rounds == (1.0, 4.0, 2.0)
    assert m["quantize_time_ratio_vs_inc_without_packing"].rounds == (1.0, 0.5, 0.5)
    assert m["predicted_compression_ratio"].value == PLAN.summary()["predicted_compression_ratio"]
    assert m["eligible_params"].value == 128 and m["sensitivity_threshold"].value == 0.25
    assert m["compression_ratio_torchao"].value == 3.9 and m["peak_rss_growth_ratio"].value == 1.1


def test_one_round_records_no_rounds():
    m = comparison({q: [s[0]] for q, s in SECONDS.items()}, PACKING[:1]).metrics
    assert m["quantize_time_ratio_vs_torchao"].rounds is None and m["quantize_time_ratio_vs_inc"].rounds is None
    assert m["quantize_seconds"].rounds is None and m["quantize_seconds_inc_without_packing"].rounds is None
    assert sources(comparison()) == sources(quantizer_comparison_result(
        {q: [s[0]] for q, s in SECONDS.items()}, PACKING[:1], MEMORY, PLAN, REPORT))


def test_bandwidth_pins_every_metric_source_label_and_attachment():
    analysis, copy = [2.0, 1.0, 4.0], [1.0, 1.0, 1.0]
    result = sensitivity_bandwidth_result(4e9, 2e9, analysis, copy, scan_path="native", session_copy_gbs=3.0)
    assert sources(result) == BANDWIDTH
    assert result_problems(result) == []
    assert result.labels == {"scan_path": "native"}
    assert result.attachments == {"rounds_s": {"analysis": analysis, "copy": copy}}
    m = result.metrics
    assert m["sensitivity_read_gbs"].value == 2.0 and m["copy_gbs"].value == 2.0 and m["copy_gbs_session"].value == 3.0
    assert m["sensitivity_seconds"].value == 2.0 and m["eligible_weight_bytes"].value == 4e9
    # per round: (4e9 / a) / (2e9 / c)
    assert m["sensitivity_bandwidth_fraction"].rounds == (1.0, 2.0, 0.5)
    assert m["sensitivity_seconds"].rounds == (2.0, 1.0, 4.0) and m["sensitivity_read_gbs"].rounds == (2.0, 4.0, 1.0)
    assert m["copy_gbs"].rounds == (2.0, 2.0, 2.0) and m["copy_gbs_session"].rounds is None
    assert m["sensitivity_bandwidth_fraction"].value == 1.0


def test_bandwidth_records_the_loop_that_ran_and_the_cpus_vector_extensions():
    result = sensitivity_bandwidth_result(1e9, 1e9, [1.0], [1.0], scan_path="native_c (avx2, openmp)",
                                          vector_extensions=["sse4_2", "avx", "avx2", "fma"])
    assert result.labels == {"scan_path": "native_c (avx2, openmp)", "cpu_vector_extensions": "sse4_2 avx avx2 fma"}
    assert sensitivity_bandwidth_result(1e9, 1e9, [1.0], [1.0], scan_path="torch",
                                        vector_extensions=[]).labels["cpu_vector_extensions"] == "unknown"


@pytest.mark.parametrize("session", [None, 0.0])
def test_bandwidth_without_a_session_spec_records_no_session_copy(session):
    result = sensitivity_bandwidth_result(1e9, 1e9, [1.0], [1.0], scan_path="torch", session_copy_gbs=session)
    assert sources(result) == {k: v for k, v in BANDWIDTH.items() if k != "copy_gbs_session"}


def test_bandwidth_fractions():
    fractions = bandwidth_fractions(100, 400, [1.0, 2.0], [2.0, 2.0])
    assert fractions == [0.5, 0.25] and statistics.median(fractions) == 0.375
