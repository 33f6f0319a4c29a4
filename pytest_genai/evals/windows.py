"""Token windows for perplexity: pure functions over token lists, no model.

``rolling_windows`` is lm-evaluation-harness's rolling loglikelihood scheme (``get_rolling_token_windows`` followed by
``make_disjoint_window``): every token of the list is predicted exactly once; the first token is conditioned on a
prefix token (BOS, else EOS); each later window sees at least ``context_len - 1`` earlier tokens as context.

``sliding_windows`` is the same scheme named by the usual settings: a window of ``context`` tokens advanced by
``stride`` tokens, every token predicted once with at least ``context - stride`` tokens of context
(``stride == context``: non-overlapping windows, each conditioned on the previous window's last token).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence


@dataclasses.dataclass(frozen=True)
class Window:
    """One model call: ``context`` tokens condition, ``continuation`` tokens are scored (the model input is
    ``(context + continuation)[:-1]``)."""

    context: tuple[int, ...]
    continuation: tuple[int, ...]


def rolling_windows(tokens: Sequence[int], prefix_token: int, max_len: int, context_len: int = 1) -> Iterator[Window]:
    """Disjoint rolling windows over ``tokens`` (lm-eval's definition; ``context_len=1`` is what its
    ``loglikelihood_rolling`` uses). Each window's input is at most ``max_len`` tokens."""
    if not 1 <= context_len <= max_len:
        raise ValueError(f"context_len must be in [1, max_len={max_len}], got {context_len}")
    tokens = list(tokens)
    if not tokens:
        return
    pred_len = max_len - context_len + 1
    first = min(max_len, len(tokens))
    yield _disjoint([prefix_token] + tokens[: first - 1], tokens[:first])
    predicted = first
    while predicted < len(tokens):
        n_pred = min(len(tokens) - predicted, pred_len)
        end = predicted + n_pred
        yield _disjoint(tokens[max(0, end - max_len - 1): end - 1], tokens[end - n_pred: end])
        predicted += n_pred


def sliding_windows(tokens: Sequence[int], prefix_token: int, context: int, stride: int) -> Iterator[Window]:
    """Windows of ``context`` input tokens advanced by ``stride`` (1 <= stride <= context)."""
    if context < 1:
        raise ValueError(f"context must be a positive number of tokens, got {context}")
    if not 1 <= stride <= context:
        raise ValueError(f"stride must be in [1, context={context}], got {stride}; use stride == context for "
                         "non-overlapping windows")
    return rolling_windows(tokens, prefix_token, max_len=context, context_len=context - stride + 1)


def _disjoint(inputs: list[int], predicted: list[int]) -> Window:
    """Split a window's input into the conditioning part and the scored tokens (lm-eval's make_disjoint_window)."""
    keep = len(inputs) - (len(predicted) - 1)
    return Window(tuple(inputs[:keep]), tuple(predicted))
