"""What the quantizer benchmarks record (``benchmarks/test_quantizer.py``): each run as a
:class:`~pytest_genai.results.measurement.Result` (pure).

:func:`quantizer_comparison_result`: pytest-genai's quantizer against torchao and INC on identical fresh models
(median seconds of interleaved rounds and their per-round ratios, peak RSS growth from the memory probes, measured
compression and the plan's prediction). :func:`sensitivity_bandwidth_result`: the sensitivity analysis' read
bandwidth against a copy's, per interleaved round. Every metric is ``measured`` except the plan's ``modeled``
prediction; units are the metric registry's (``claims/data/metrics_quant.toml``). No torch here.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Mapping, Sequence

from pytest_genai.quant.bench import round_ratios
from pytest_genai.results.measurement import Measurement, Result, rounds_of

MEASURED, MODELED = "measured", "modeled"
QUANTIZERS = ("pytest-genai", "torchao", "inc")


def _m(value: float, source: str = MEASURED, rounds: Sequence[float] | None = None) -> Measurement:
    return Measurement(value, source=source, rounds=None if rounds is None else tuple(rounds))


def quantizer_comparison_result(seconds: Mapping[str, Sequence[float]], inc_packing_s: Sequence[float],
                                memory: Mapping[str, Any], plan: Any, report: Mapping[str, Any]) -> Result:
    """The speed and memory comparison. ``seconds``: each quantizer's seconds per interleaved round (keys
    :data:`QUANTIZERS`, rounds in the same order); ``inc_packing_s``: per INC round, the seconds its int32 packing
    took (inside INC's time); ``memory``: each quantizer's :class:`~pytest_genai.quant.bench.MemoryProbe`;
    ``plan``: pytest-genai's :class:`~pytest_genai.quant.plan.PrecisionPlan` of the last round, ``report``: the
    :func:`~pytest_genai.quant.compression_report` of the model it quantized.

    Time ratios are pytest-genai's seconds over the other's; vs torchao and INC with every round's value (from two
    rounds on), vs INC without its packing as the median of the per-round ratios."""
    ours, inc = seconds["pytest-genai"], seconds["inc"]
    med = {q: statistics.median(seconds[q]) for q in QUANTIZERS}
    vs_torchao, vs_inc = round_ratios(seconds, "pytest-genai", "torchao"), round_ratios(seconds, "pytest-genai", "inc")
    without = [s - p for s, p in zip(inc, inc_packing_s)]
    vs_bare_inc = [a / w for a, w in zip(ours, without)]
    summary = plan.summary()
    probe = memory["pytest-genai"]
    metrics = {
        # every quantizer's seconds with its rounds (from two on): the gate judges them on intervals
        "quantize_seconds": _m(med["pytest-genai"], rounds=rounds_of(ours)),
        "quantize_seconds_torchao": _m(med["torchao"], rounds=rounds_of(seconds["torchao"])),
        "quantize_seconds_inc": _m(med["inc"], rounds=rounds_of(inc)),
        "quantize_seconds_inc_packing": _m(statistics.median(inc_packing_s), rounds=rounds_of(inc_packing_s)),
        "quantize_seconds_inc_without_packing": _m(statistics.median(without), rounds=rounds_of(without)),
        "quantize_time_ratio_vs_inc_without_packing": _m(statistics.median(vs_bare_inc), rounds=rounds_of(vs_bare_inc)),
        "quantize_time_ratio_vs_torchao": _m(med["pytest-genai"] / med["torchao"],
                                             rounds=vs_torchao if len(vs_torchao) > 1 else None),
        "quantize_time_ratio_vs_inc": _m(med["pytest-genai"] / med["inc"], rounds=vs_inc if len(vs_inc) > 1 else None),
        "model_fp32_bytes": _m(probe.model_fp32_bytes),
        "peak_rss_bytes": _m(probe.peak_rss_bytes),
        "peak_rss_growth_ratio": _m(probe.peak_rss_growth_ratio),
        "quantize_extra_rss_ratio": _m(probe.quantize_extra_rss_ratio),
        "peak_rss_growth_ratio_torchao": _m(memory["torchao"].peak_rss_growth_ratio),
        "peak_rss_growth_ratio_inc": _m(memory["inc"].peak_rss_growth_ratio),
        "compression_ratio": _m(report["compression_ratio"]),
        "compression_ratio_model": _m(report["compression_ratio_model"]),
        "compression_ratio_safetensors": _m(report["compression_ratio_safetensors"]),
        "compression_ratio_torchao": _m(memory["torchao"].compression_ratio),
        "compression_ratio_inc": _m(memory["inc"].compression_ratio),
        "predicted_compression_ratio": _m(summary["predicted_compression_ratio"], MODELED),
        "compression_ratio_prediction_error": _m(report["compression_ratio_prediction_error"]),
        "mean_bits_per_weight": _m(report["mean_bits_per_weight"]),
        "sensitivity_threshold": _m(plan.threshold),
        "eligible_params": _m(summary["eligible_params"]),
    }
    labels = {"sensitivity": plan.sensitivity, "peak_memory_method": probe.method}
    attachments = {
        "plan": {**summary, "formats": plan.formats, "scores": plan.scores},
        "compression": report,
        "quantize_seconds_rounds": seconds,
        "memory": {q: dataclasses.asdict(m) for q, m in memory.items()},
    }
    return Result(metrics, labels, attachments)


def sensitivity_bandwidth_result(read_bytes: int, copy_bytes: int, analysis_s: Sequence[float],
                                 copy_s: Sequence[float], *, scan_path: str,
                                 session_copy_gbs: float | None = None,
                                 vector_extensions: Sequence[str] | None = None) -> Result:
    """The sensitivity analysis reading ``read_bytes`` (every eligible weight once) in ``analysis_s`` seconds per
    round, against a copy moving ``copy_bytes`` (read + write) in ``copy_s`` per round, interleaved: both
    bandwidths over their median seconds and the fraction (analysis over copy) with every round's value;
    ``session_copy_gbs``: the session's CPU spec copy bandwidth, when it has one; ``scan_path``: which kernel scanned
    the weights (``quant.threshold.scan_path()``: its loop, e.g. ``native_c (avx2)``); ``vector_extensions``: the CPU's
    (``runtime.native.vector_extensions()``), which decide the loop ``-march=native`` builds."""
    fractions = bandwidth_fractions(read_bytes, copy_bytes, analysis_s, copy_s)
    metrics = {
        # every figure with its rounds: the gate judges each on an interval
        "sensitivity_read_gbs": _m(read_bytes / statistics.median(analysis_s) / 1e9,
                                   rounds=rounds_of([read_bytes / a / 1e9 for a in analysis_s])),
        "copy_gbs": _m(copy_bytes / statistics.median(copy_s) / 1e9,
                       rounds=rounds_of([copy_bytes / c / 1e9 for c in copy_s])),
        "sensitivity_bandwidth_fraction": _m(statistics.median(fractions), rounds=fractions),
        "sensitivity_seconds": _m(statistics.median(analysis_s), rounds=rounds_of(analysis_s)),
        "eligible_weight_bytes": _m(read_bytes),
    }
    if session_copy_gbs:
        metrics["copy_gbs_session"] = _m(session_copy_gbs)
    attachments = {"rounds_s": {"analysis": list(analysis_s), "copy": list(copy_s)}}
    labels = {"scan_path": scan_path}
    if vector_extensions is not None:
        labels["cpu_vector_extensions"] = " ".join(vector_extensions) or "unknown"
    return Result(metrics, labels, attachments)


def bandwidth_fractions(read_bytes: int, copy_bytes: int, analysis_s: Sequence[float],
                        copy_s: Sequence[float]) -> list[float]:
    """Per interleaved round: the analysis' bytes read per second over the copy's bytes moved per second."""
    return [(read_bytes / a) / (copy_bytes / c) for a, c in zip(analysis_s, copy_s)]
