"""The three evaluations of Paper A, A1, with lm-evaluation-harness's definitions.

* WikiText-2: token-level perplexity over the concatenated text with a sliding window (``context``/``stride``), and
  lm-eval's ``wikitext`` metrics (word perplexity, byte perplexity, bits per byte) from rolling windows per page.
* HellaSwag: ``acc`` and ``acc_norm`` over four endings (each scored as ``" " + ending`` after the query).
* BoolQ: ``acc`` with the prompt ``"{passage}\\nQuestion: {question}?\\nAnswer:"`` and choices ``" no"``/``" yes"``.

Each result keeps per-example outcomes so a quantized run can be compared with fp32 on the same examples.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from pytest_genai.evals import metrics
from pytest_genai.evals.data import BoolQItem, HellaSwagItem
from pytest_genai.evals.lm import EvalLM
from pytest_genai.evals.text import count_bytes, count_words, detokenize_wikitext
from pytest_genai.evals.windows import Window, rolling_windows, sliding_windows

BOOLQ_CHOICES = ("no", "yes")


@dataclasses.dataclass(frozen=True)
class PerplexityResult:
    """Sliding-window token perplexity over one text."""

    perplexity: float
    loglikelihood: float
    scored_tokens: int
    input_tokens: int
    context: int
    stride: int


@dataclasses.dataclass(frozen=True)
class RollingResult:
    """lm-eval ``wikitext`` metrics over documents (rolling windows, one log-likelihood per document)."""

    word_perplexity: float
    byte_perplexity: float
    bits_per_byte: float
    token_perplexity: float
    loglikelihoods: tuple[float, ...]
    words: tuple[int, ...]
    n_bytes: tuple[int, ...]
    scored_tokens: int
    input_tokens: int


@dataclasses.dataclass(frozen=True)
class ChoiceResult:
    """Multiple-choice accuracy; ``correct``/``correct_norm`` hold each example's 0/1 outcome in input order."""

    acc: float
    acc_norm: float | None
    correct: tuple[float, ...]
    correct_norm: tuple[float, ...] | None
    n: int
    input_tokens: int


def sliding_perplexity(lm: EvalLM, text: str, *, context: int, stride: int) -> PerplexityResult:
    """Token-level perplexity of ``text`` (tokenized as one sequence), every token predicted once with at least
    ``context - stride`` tokens of context; the first token is conditioned on the prefix token."""
    if context > lm.max_length:
        raise ValueError(f"context={context} exceeds the model's evaluation max_length={lm.max_length}")
    tokens = lm.encode(text)
    if not tokens:
        raise ValueError("the text has no tokens; pass a non-empty evaluation text")
    windows = list(sliding_windows(tokens, int(lm.prefix_token_id), context, stride))
    run = lm.score(windows)
    ll = math.fsum(s.logprob for s in run.scores)
    n = sum(s.n_tokens for s in run.scores)
    return PerplexityResult(metrics.token_perplexity(ll, n), ll, n, run.input_tokens, context, stride)


def rolling_windows_for(lm: EvalLM, document: str) -> list[Window]:
    """lm-eval's ``loglikelihood_rolling`` windows for one document (``max_length`` tokens, 1 token of context)."""
    return list(rolling_windows(lm.encode(document), int(lm.prefix_token_id), lm.max_length, 1))


def rolling_loglikelihoods(lm: EvalLM, documents: Sequence[str]) -> tuple[list[float], int, int]:
    """Per-document rolling log-likelihoods (all windows of all documents batched together), scored tokens and
    model input tokens."""
    windows: list[Window] = []
    owner: list[int] = []
    for d, document in enumerate(documents):
        doc_windows = rolling_windows_for(lm, document)
        windows.extend(doc_windows)
        owner.extend([d] * len(doc_windows))
    run = lm.score(windows)
    totals = [0.0] * len(documents)
    for d, score in zip(owner, run.scores):
        totals[d] += score.logprob
    return totals, sum(s.n_tokens for s in run.scores), run.input_tokens


def wikitext_rolling(lm: EvalLM, pages: Sequence[str]) -> RollingResult:
    """lm-eval's ``wikitext`` task on raw pages: score the detokenized page, count words and bytes of the raw one."""
    if not pages:
        raise ValueError("no WikiText pages to evaluate")
    lls, scored, inputs = rolling_loglikelihoods(lm, [detokenize_wikitext(p) for p in pages])
    words = tuple(count_words(p) for p in pages)
    n_bytes = tuple(count_bytes(p) for p in pages)
    return RollingResult(
        word_perplexity=metrics.word_perplexity(lls, words),
        byte_perplexity=metrics.byte_perplexity(lls, n_bytes),
        bits_per_byte=metrics.bits_per_byte(lls, n_bytes),
        token_perplexity=metrics.token_perplexity(math.fsum(lls), scored),
        loglikelihoods=tuple(lls), words=words, n_bytes=n_bytes, scored_tokens=scored, input_tokens=inputs,
    )


def multiple_choice(lm: EvalLM, contexts: Sequence[str], choices: Sequence[Sequence[str]], golds: Sequence[int],
                    *, normalize: bool) -> ChoiceResult:
    """lm-eval ``multiple_choice``: each choice is scored as ``" " + choice`` after its context."""
    if not (len(contexts) == len(choices) == len(golds)):
        raise ValueError(f"{len(contexts)} contexts, {len(choices)} choice lists and {len(golds)} labels; pass one each")
    if not contexts:
        raise ValueError("no examples to evaluate")
    requests = [lm.encode_pair(ctx, " " + choice) for ctx, options in zip(contexts, choices) for choice in options]
    run = lm.score(requests)
    correct, correct_norm = [], []
    at = 0
    for options, gold in zip(choices, golds):
        lls = [s.logprob for s in run.scores[at: at + len(options)]]
        at += len(options)
        correct.append(metrics.choice_correct(lls, gold))
        if normalize:
            correct_norm.append(metrics.choice_correct_norm(lls, options, gold))
    return ChoiceResult(
        acc=metrics.mean(correct),
        acc_norm=metrics.mean(correct_norm) if normalize else None,
        correct=tuple(correct), correct_norm=tuple(correct_norm) if normalize else None,
        n=len(correct), input_tokens=run.input_tokens,
    )


def hellaswag(lm: EvalLM, items: Sequence[HellaSwagItem]) -> ChoiceResult:
    return multiple_choice(lm, [i.query for i in items], [i.endings for i in items], [i.label for i in items],
                           normalize=True)


def boolq_prompt(item: BoolQItem) -> str:
    return f"{item.passage}\nQuestion: {item.question}?\nAnswer:"


def boolq(lm: EvalLM, items: Sequence[BoolQItem]) -> ChoiceResult:
    return multiple_choice(lm, [boolq_prompt(i) for i in items], [BOOLQ_CHOICES] * len(items),
                           [i.label for i in items], normalize=False)
