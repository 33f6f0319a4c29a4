"""The same evaluations run by lm-evaluation-harness, for a side-by-side check of this suite.

lm-eval's own pieces are used end to end: its ``HFLM`` model class (given the already-loaded model and tokenizer, so
nothing is downloaded), its ``wikitext`` task functions (``wikitext_detokenizer``, ``process_results``) and its
``weighted_perplexity`` / ``bits_per_byte`` aggregations. Only the documents are ours: the same raw pages this suite
scores, passed in as the task's ``{"page": ...}`` documents instead of lm-eval's hub copy. For HellaSwag the same
(query, " " + ending) pairs go through ``HFLM.loglikelihood``, as lm-eval's ``multiple_choice`` tasks send them.

:func:`wikitext_result` and :func:`choice_result` turn both sides' outcomes and timings into what
``benchmarks/test_eval_vs_lmeval.py`` records (pure): each metric with its source (``measured``, except the
``modeled`` speedup ceiling; units are the metric registry's, ``claims/data/metrics_evals.toml``).
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING, Any, Sequence

from pytest_genai import progress
from pytest_genai.evals import metrics, scoring, throughput
from pytest_genai.results.measurement import Measurement, Result, rounds_of

if TYPE_CHECKING:
    from pytest_genai.evals.lm import EvalLM
    from pytest_genai.evals.tasks import ChoiceResult, RollingResult

MEASURED, MODELED = "measured", "modeled"


class LmEvalUnavailable(ImportError):
    pass


@dataclasses.dataclass(frozen=True)
class LmEvalWikitext:
    word_perplexity: float
    byte_perplexity: float
    bits_per_byte: float
    loglikelihoods: tuple[float, ...]


def _lm_eval() -> Any:
    try:
        import lm_eval  # noqa: F401
        from lm_eval.api.instance import Instance
        from lm_eval.api.metrics import bits_per_byte, weighted_perplexity
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks.wikitext import preprocess_wikitext
    except ImportError as exc:
        raise LmEvalUnavailable(f"lm-evaluation-harness is not importable ({exc}); `pip install pytest-genai[lmeval]`") from None
    return Instance, HFLM, preprocess_wikitext, weighted_perplexity, bits_per_byte


def make_hflm(model: Any, tokenizer: Any, *, max_length: int, batch_size: int, device: Any) -> Any:
    """lm-eval's HF model class around an already-loaded model (no download, no second copy)."""
    _, HFLM, *_ = _lm_eval()
    return HFLM(pretrained=model, tokenizer=tokenizer, max_length=max_length, batch_size=batch_size, device=str(device))


def wikitext_requests(pages: Sequence[str]) -> list[Any]:
    """lm-eval ``loglikelihood_rolling`` requests for raw pages, built with the wikitext task's own detokenizer."""
    Instance, _, pre, *_ = _lm_eval()
    return [Instance(request_type="loglikelihood_rolling", doc={"page": page},
                     arguments=(pre.wikitext_detokenizer({"page": page}),), idx=i)
            for i, page in enumerate(pages)]


def rolling_loglikelihoods(hflm: Any, requests: Sequence[Any]) -> list[float]:
    return list(hflm.loglikelihood_rolling(list(requests), disable_tqdm=not progress.bars_enabled()))


def wikitext_metrics(pages: Sequence[str], loglikelihoods: Sequence[float]) -> LmEvalWikitext:
    """Aggregate with lm-eval's ``process_results`` and metric functions."""
    _, _, pre, weighted_perplexity, bits_per_byte = _lm_eval()
    per_doc = [pre.process_results({"page": page}, [ll]) for page, ll in zip(pages, loglikelihoods)]
    return LmEvalWikitext(
        word_perplexity=float(weighted_perplexity([d["word_perplexity"] for d in per_doc])),
        byte_perplexity=float(weighted_perplexity([d["byte_perplexity"] for d in per_doc])),
        bits_per_byte=float(bits_per_byte([d["bits_per_byte"] for d in per_doc])),
        loglikelihoods=tuple(float(x) for x in loglikelihoods),
    )


def loglikelihood_requests(pairs: Sequence[tuple[str, str]]) -> list[Any]:
    """lm-eval ``loglikelihood`` requests for (context, continuation) string pairs."""
    Instance, *_ = _lm_eval()
    return [Instance(request_type="loglikelihood", doc={}, arguments=(ctx, cont), idx=i)
            for i, (ctx, cont) in enumerate(pairs)]


def loglikelihoods(hflm: Any, requests: Sequence[Any]) -> list[float]:
    return [float(ll) for ll, _greedy in hflm.loglikelihood(list(requests), disable_tqdm=not progress.bars_enabled())]


def relative_difference(ours: float, theirs: float) -> float:
    """``|ours - theirs| / theirs``: how far our number is from lm-eval's, relative to lm-eval's."""
    return abs(ours - theirs) / theirs


def wikitext_result(ours: RollingResult, theirs: LmEvalWikitext, *, ours_s: float, theirs_s: float,
                    profile: throughput.OpProfile, peak_tflops: float | None = None, data_note: str = "") -> Result:
    """WikiText on both sides: both word perplexities and their relative difference, our bits per byte, the
    model input tokens (the same windows on both sides), each side's tokens/s over its median seconds and the
    wall-time ratio; from one profiled run of ours, the matrix multiplies' time share and TFLOP/s (and fraction of
    ``peak_tflops``, the device's fp32 datasheet peak, when known) and the modeled ceiling on any speedup over
    lm-eval for the same fp32 computation (lm-eval's time over our matmul time alone). ``data_note``: where the
    pages came from (``evals.data.source_note``), the ``data`` label."""
    tokens = ours.input_tokens
    speedup = metrics.ratio(theirs_s, ours_s)
    out: dict[str, Measurement] = {
        "word_perplexity": Measurement(ours.word_perplexity, MEASURED),
        "lmeval_word_perplexity": Measurement(theirs.word_perplexity, MEASURED),
        "word_ppl_rel_diff": Measurement(relative_difference(ours.word_perplexity, theirs.word_perplexity), MEASURED),
        "bits_per_byte": Measurement(ours.bits_per_byte, MEASURED),
        "eval_input_tokens": Measurement(tokens, MEASURED),
        "tokens_per_s": Measurement(throughput.tokens_per_s(tokens, ours_s), MEASURED),
        "lmeval_tokens_per_s": Measurement(throughput.tokens_per_s(tokens, theirs_s), MEASURED),
        "speedup_vs_lmeval": Measurement(speedup, MEASURED),
        "matmul_time_share": Measurement(profile.matmul_share, MEASURED),
        "matmul_tflops": Measurement(profile.matmul_tflops, MEASURED),
    }
    if peak_tflops:
        out["matmul_fraction_of_peak"] = Measurement(profile.matmul_tflops / peak_tflops, MEASURED)
    out["modeled_speedup_ceiling_vs_lmeval"] = Measurement(speedup * throughput.amdahl_ceiling(profile.matmul_share),
                                                           MODELED)
    return Result(out, labels=_data_label(data_note))


def choice_outcomes(loglikelihoods: Sequence[float], choices: Sequence[Sequence[str]], golds: Sequence[int],
                    normalize: bool) -> tuple[list[float], list[float] | None]:
    """Per-example 0/1 outcomes (``acc``, and ``acc_norm`` when ``normalize``) from lm-eval's log-likelihoods of
    every (context, " " + choice) request, in order: ``choices[i]`` holds example i's options."""
    correct, norm, at = [], [], 0
    for options, gold in zip(choices, golds):
        item = list(loglikelihoods[at: at + len(options)])
        at += len(options)
        correct.append(metrics.choice_correct(item, gold))
        if normalize:
            norm.append(metrics.choice_correct_norm(item, options, gold))
    if at != len(loglikelihoods):
        raise ValueError(f"{len(loglikelihoods)} log-likelihoods for {at} choices")
    return correct, (norm if normalize else None)


def lmeval_input_tokens(lm: EvalLM, pairs: Sequence[tuple[str, str]], max_length: int) -> int:
    """lm-eval's work on (context, continuation) requests: the tokens of one sequence per distinct model input (it
    runs a request once per distinct context + continuation[:-1], which folds single-token choices of one context
    together)."""
    inputs = {scoring.model_input(lm.encode_pair(ctx, cont), max_length)[0] for ctx, cont in pairs}
    return sum(len(x) for x in inputs)


def choice_result(ours: ChoiceResult, theirs_correct: Sequence[float], theirs_norm: Sequence[float] | None, *,
                  their_tokens: int, our_s: Sequence[float], their_s: Sequence[float], data_note: str = "") -> Result:
    """A multiple-choice task on both sides: our ``acc`` (and ``acc_norm``) with lm-eval's standard error
    (``acc_stderr``, from two examples on), lm-eval's accuracies from its log-likelihoods, each side's model input
    tokens and tokens/s over its median seconds, and the speedup (lm-eval's seconds over ours) with every
    interleaved round's value. ``our_s`` / ``their_s``: seconds per round, in the same order; ``data_note``: the
    ``data`` label, as for :func:`wikitext_result`."""
    speedups = tuple(t / o for t, o in zip(their_s, our_s))  # per interleaved round
    out: dict[str, Measurement] = {"acc": Measurement(ours.acc, MEASURED)}
    if len(ours.correct) >= 2:
        out["acc_stderr"] = Measurement(metrics.mean_stderr(ours.correct), MEASURED)
    out["lmeval_acc"] = Measurement(metrics.mean(theirs_correct), MEASURED)
    if ours.acc_norm is not None and ours.correct_norm is not None and theirs_norm is not None:
        out["acc_norm"] = Measurement(ours.acc_norm, MEASURED)
        if len(ours.correct_norm) >= 2:
            out["acc_norm_stderr"] = Measurement(metrics.mean_stderr(ours.correct_norm), MEASURED)
        out["lmeval_acc_norm"] = Measurement(metrics.mean(theirs_norm), MEASURED)
    out.update({
        "eval_input_tokens": Measurement(ours.input_tokens, MEASURED),
        "lmeval_input_tokens": Measurement(their_tokens, MEASURED),
        # each side's rounds as well: the gate judges the throughputs on intervals
        "tokens_per_s": Measurement(throughput.tokens_per_s(ours.input_tokens, statistics.median(our_s)), MEASURED,
                                    rounds=_rates(ours.input_tokens, our_s)),
        "lmeval_tokens_per_s": Measurement(throughput.tokens_per_s(their_tokens, statistics.median(their_s)),
                                           MEASURED, rounds=_rates(their_tokens, their_s)),
        "speedup_vs_lmeval": Measurement(statistics.median(speedups), MEASURED, rounds=speedups),
    })
    return Result(out, labels=_data_label(data_note))


def _rates(tokens: int, seconds: Sequence[float]) -> tuple[float, ...] | None:
    """Tokens/s of every round."""
    return rounds_of(throughput.tokens_per_s(tokens, s) for s in seconds)


def _data_label(note: str) -> dict[str, str]:
    return {"data": note} if note else {}
