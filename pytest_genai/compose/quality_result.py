"""What one row of the A1 quality benchmark records (``benchmarks/test_quantization.py``): an fp32 or quantized
model's evaluation as a :class:`~pytest_genai.results.measurement.Result` (pure, no torch).

Every row: the forward-only tokens/s, peak memory (when the device reports it), model bytes, the task's metrics and
the evaluation's work. A quantized row adds the quantization time, its plan and compute paths, pruning and the
measured compression (real mode), the plan's ``modeled`` compression prediction, and the comparison with the same
session's fp32 baseline on the same examples. Every other metric is ``measured``; units are the metric registry's
(``claims/data/metrics_*.toml``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pytest_genai.stats import paired_drop_interval
from pytest_genai.compose.quantized_eval import compute_path_counts
from pytest_genai.evals import metrics as evals_metrics
from pytest_genai.evals.throughput import tokens_per_s
from pytest_genai.results.measurement import Measurement, Result, rounds_of
from pytest_genai.runtime.energy import energy_metrics

if TYPE_CHECKING:
    from pytest_genai.compose.quantized_eval import QuantizedModel
    from pytest_genai.evals.runner import TaskResult

MEASURED, MODELED = "measured", "modeled"


def _m(value: float, source: str = MEASURED, **kw: Any) -> Measurement:
    return Measurement(value, source=source, **kw)


#: What ``peak_memory_bytes`` holds, per device kind: on an accelerator the model's own forward peak (the allocator's
#: peak less what other objects held when it was reset: the session keeps the fp32 baseline on the device beside
#: every quantized row); on the CPU the process's RSS high-water mark, which cannot be reset or split.
PEAK_MEASURES = {"cuda": "allocator_peak_of_this_model", "hpu": "allocator_peak_of_this_model",
                 "cpu": "process_rss_high_water"}


def own_peak_bytes(peak: int | None, allocated_at_reset: int | None, model_resident: int) -> int | None:
    """The row's model's own peak: the allocator's peak since the reset, less what was allocated at the reset that is
    not this model (``allocated_at_reset - model_resident``). None without both device counts."""
    if peak is None or allocated_at_reset is None:
        return None
    others = max(allocated_at_reset - model_resident, 0)
    return max(peak - others, model_resident)


def quality_result(task: str, result: "TaskResult", baseline: "TaskResult", *, data_note: str,
                   forward_tokens: int, forward_s: float, peak_memory_bytes: int | None, model_bytes: int,
                   quantized: "QuantizedModel | None" = None, forward_round_s: Sequence[float] = (),
                   peak_memory_measure: str | None = None, energy_round_j: Sequence[float] = (),
                   energy_method: str | None = None) -> Result:
    """One row: ``result`` (the row's model on ``task``) and, when ``quantized`` (the fp32 row passes None),
    everything the quantization did and the comparison with ``baseline`` (the session's fp32 run on the same
    examples). ``forward_tokens`` / ``forward_s``: the throughput batch's tokens and the median seconds of its timed
    forwards, ``forward_round_s`` each timed round's seconds (two or more: ``tokens_per_s`` records every round's
    rate, so a timing claim on it is judged on their interval); ``data_note``: where the task's data came from
    (``evals.data.source_note``)."""
    rates = rounds_of(tokens_per_s(forward_tokens, t) for t in forward_round_s)
    out: dict[str, Measurement] = {"tokens_per_s": _m(tokens_per_s(forward_tokens, forward_s), rounds=rates)}
    if peak_memory_bytes is not None:
        out["peak_memory_bytes"] = _m(peak_memory_bytes)
    out.update(energy_metrics(forward_tokens, energy_round_j))
    out["model_bytes"] = _m(model_bytes)
    out.update({name: _m(value) for name, value in result.metrics.items()})
    out.update({
        "n_examples": _m(result.n_examples),
        "eval_input_tokens": _m(result.input_tokens),
        "eval_seconds": _m(result.seconds),
        "eval_tokens_per_s": _m(result.eval_tokens_per_s),
    })
    labels = {"data": data_note}
    if peak_memory_bytes is not None and peak_memory_measure:
        labels["peak_memory_measure"] = peak_memory_measure
    if "energy_j" in out and energy_method:
        labels["energy_method"] = energy_method
    attachments: dict[str, Any] = {}
    if quantized is None:
        return Result(out, labels, attachments)
    out["quantize_seconds"] = _m(quantized.seconds)
    attachments["plan"] = quantized.plan_summary
    labels["sensitivity"] = quantized.plan_summary.get("sensitivity", "")
    attachments["compute_paths"] = {"counts": compute_path_counts(quantized.compute_paths),
                                    "per_layer": quantized.compute_paths}
    if quantized.pruning is not None:
        attachments["pruning"] = quantized.pruning
        out["pruned_fraction"] = _m(quantized.pruning["pruned_fraction"])
    out["predicted_compression_ratio"] = _m(quantized.plan_summary["predicted_compression_ratio"], MODELED)
    report = quantized.report
    if report is not None:
        attachments["compression"] = report
        for name in ("compression_ratio", "compression_ratio_model", "compression_ratio_safetensors",
                     "mean_bits_per_weight"):
            out[name] = _m(report[name])
        if report["sparse_storage"]:
            out["compression_ratio_without_mask"] = _m(report["compression_ratio_without_mask"])
            out["nonzero_fraction"] = _m(report["nonzero_fraction"])
    out.update(comparison_metrics(task, result, baseline))
    return Result(out, labels, attachments)


def comparison_metrics(task: str, result: "TaskResult", baseline: "TaskResult") -> dict[str, Measurement]:
    """Quantized vs the same session's fp32 run, on the same examples: perplexity ratios and delta on WikiText;
    on a multiple-choice task the paired accuracy drop (with the interval of McNemar's exact test of the flipped
    answers, which the acc_drop claims are judged on), its one-sided lower bound, the acc_norm drop where the task
    has one, and the flips each way."""
    q, b = result.metrics, baseline.metrics
    if task == "wikitext":
        return {
            "ppl_ratio": _m(evals_metrics.ratio(q["perplexity"], b["perplexity"])),
            "ppl_delta": _m(q["perplexity"] - b["perplexity"]),
            "word_ppl_ratio": _m(evals_metrics.ratio(q["word_perplexity"], b["word_perplexity"])),
        }
    pairs = list(zip(baseline.per_example, result.per_example))
    to_wrong, to_right = sum(1 for x, y in pairs if x > y), sum(1 for x, y in pairs if x < y)
    out = {
        "acc_drop": _m(evals_metrics.paired_drop(baseline.per_example, result.per_example),
                       interval=paired_drop_interval(to_wrong, to_right, len(pairs))),
        "acc_drop_lcb95": _m(evals_metrics.paired_drop_lower_bound(baseline.per_example, result.per_example)),
    }
    if "acc_norm" in q:
        out["acc_norm_drop"] = _m(b["acc_norm"] - q["acc_norm"])
    out["flips_to_wrong"] = _m(to_wrong)
    out["flips_to_right"] = _m(to_right)
    return out
