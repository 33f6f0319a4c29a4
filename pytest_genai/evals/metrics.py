"""Evaluation metrics as pure functions (floats in, floats out), with the definitions of lm-evaluation-harness.

Log-likelihoods are natural-log sums (negative numbers). Which way is better is the metric registry's ``direction``
(``claims/data/metrics_evals.toml``), the one place it is said.
"""
from __future__ import annotations

import math
from typing import Sequence


def _check_counts(loglikelihoods: Sequence[float], counts: Sequence[int], what: str) -> None:
    if len(loglikelihoods) != len(counts):
        raise ValueError(f"{len(loglikelihoods)} log-likelihoods but {len(counts)} {what} counts; pass one per document")
    if sum(counts) <= 0:
        raise ValueError(f"the total {what} count must be positive, got {sum(counts)}")


def token_perplexity(total_loglikelihood: float, n_tokens: int) -> float:
    """Token-level perplexity: ``exp(-sum log p(token) / number of scored tokens)``."""
    if n_tokens <= 0:
        raise ValueError(f"n_tokens must be positive, got {n_tokens}")
    return math.exp(-total_loglikelihood / n_tokens)


def weighted_perplexity(loglikelihoods: Sequence[float], counts: Sequence[int]) -> float:
    """lm-eval's ``weighted_perplexity``: ``exp(-sum(ll_i) / sum(count_i))`` over documents."""
    _check_counts(loglikelihoods, counts, "unit")
    return math.exp(-math.fsum(loglikelihoods) / sum(counts))


def word_perplexity(loglikelihoods: Sequence[float], words: Sequence[int]) -> float:
    """lm-eval ``wikitext`` word_perplexity: per-document rolling log-likelihoods, divided by the words counted on
    the raw (not detokenized) pages."""
    _check_counts(loglikelihoods, words, "word")
    return weighted_perplexity(loglikelihoods, words)


def byte_perplexity(loglikelihoods: Sequence[float], n_bytes: Sequence[int]) -> float:
    """lm-eval ``wikitext`` byte_perplexity: ``exp(-sum ll / sum UTF-8 bytes)``."""
    _check_counts(loglikelihoods, n_bytes, "byte")
    return weighted_perplexity(loglikelihoods, n_bytes)


def bits_per_byte(loglikelihoods: Sequence[float], n_bytes: Sequence[int]) -> float:
    """lm-eval ``bits_per_byte``: ``-sum ll / sum bytes / ln 2`` (= log2 of byte perplexity)."""
    _check_counts(loglikelihoods, n_bytes, "byte")
    return -math.fsum(loglikelihoods) / sum(n_bytes) / math.log(2)


def argmax(values: Sequence[float]) -> int:
    """Index of the largest value; the first one on ties (numpy's argmax, which lm-eval uses)."""
    if not values:
        raise ValueError("argmax of an empty sequence")
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def choice_correct(loglikelihoods: Sequence[float], gold: int) -> float:
    """lm-eval multiple-choice ``acc`` of one question: 1.0 if the choice with the highest summed log-likelihood
    (given the context) is the gold one."""
    return 1.0 if argmax(loglikelihoods) == gold else 0.0


def choice_correct_norm(loglikelihoods: Sequence[float], choices: Sequence[str], gold: int) -> float:
    """lm-eval ``acc_norm`` of one question: the log-likelihood of each choice divided by the choice's length in
    characters (the choice text without the leading delimiter space) before the argmax. An empty choice (HellaSwag's
    preprocessing can leave one) scores -inf, as lm-eval's division by a zero length does: never picked over another,
    and the question still counts."""
    if len(loglikelihoods) != len(choices):
        raise ValueError(f"{len(loglikelihoods)} log-likelihoods for {len(choices)} choices")
    return choice_correct([ll / len(c) if c else -math.inf for ll, c in zip(loglikelihoods, choices)], gold)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (lm-eval's aggregation for acc and acc_norm)."""
    if not values:
        raise ValueError("mean of no values; evaluate at least one example")
    return math.fsum(values) / len(values)


def mean_stderr(values: Sequence[float]) -> float:
    """Standard error of the mean as lm-eval's ``acc_stderr`` (``lm_eval.api.metrics.mean_stderr``): the sample
    standard deviation (``n - 1``) over ``sqrt(n)``; for 0/1 outcomes with accuracy ``p``, ``sqrt(p(1-p)/(n-1))``."""
    n = len(values)
    if n < 2:
        raise ValueError(f"a standard error needs at least 2 examples, got {n}")
    mu = math.fsum(values) / n
    return math.sqrt(math.fsum((x - mu) ** 2 for x in values) / (n - 1)) / math.sqrt(n)


def with_stderr(name: str, outcomes: Sequence[float]) -> dict[str, float]:
    """``{name: mean, name_stderr: its standard error}`` of per-example outcomes (no stderr for one example)."""
    out = {name: mean(outcomes)}
    if len(outcomes) >= 2:
        out[f"{name}_stderr"] = mean_stderr(outcomes)
    return out


def paired_drop(baseline: Sequence[float], other: Sequence[float]) -> float:
    """Accuracy drop on the same examples: ``mean(baseline_i - other_i)`` over per-example 0/1 outcomes
    (= baseline accuracy - other accuracy)."""
    if len(baseline) != len(other):
        raise ValueError(f"{len(baseline)} baseline outcomes but {len(other)} to compare; pass the same examples")
    return mean([b - o for b, o in zip(baseline, other)])


def paired_drop_lower_bound(baseline: Sequence[float], other: Sequence[float], z: float = 1.645) -> float:
    """One-sided lower confidence bound of the paired accuracy drop: ``d - z * s / sqrt(n)`` with ``d`` the mean and
    ``s`` the sample standard deviation of the per-example differences (normal approximation; z = 1.645 gives 95%).

    A claim "the drop is at most X" is contradicted at that confidence only when this bound exceeds X; with few
    examples a single changed answer moves the point estimate by 1/n, which this accounts for. With no changed
    answers the bound equals the drop (0)."""
    diffs = [b - o for b, o in zip(baseline, other)]
    if len(baseline) != len(other):
        raise ValueError(f"{len(baseline)} baseline outcomes but {len(other)} to compare; pass the same examples")
    n = len(diffs)
    if n < 2:
        raise ValueError("a confidence bound needs at least 2 paired examples")
    d = math.fsum(diffs) / n
    var = math.fsum((x - d) ** 2 for x in diffs) / (n - 1)
    return d - z * math.sqrt(var / n)


def ratio(value: float, baseline: float) -> float:
    """``value / baseline`` (e.g. quantized perplexity over the same run's fp32 perplexity)."""
    if baseline == 0:
        raise ValueError("baseline is zero; a ratio to it is undefined")
    return value / baseline
