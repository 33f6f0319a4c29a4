"""Batched log-likelihood scoring of (context, continuation) token requests with a causal LM.

What it computes matches lm-evaluation-harness's ``HFLM._loglikelihood_tokens``: the model input is
``(context + continuation)[-(max_length + 1):][:-1]`` and the score is the summed log-probability of the
continuation tokens, plus whether each was the greedy (argmax) token. How it computes it is leaner:

* requests with the same input are run once (BoolQ's " no"/" yes" share one forward pass);
* inputs are sorted by length and right-padded, so padding never precedes a scored token, and the attention mask
  keeps padded positions out of every real token's attention; padded positions are never scored;
* logits are computed only at the positions that are scored (``logits_to_keep``), and log-probabilities come from
  ``logit[target] - logsumexp(logits)`` without materializing a log-softmax of the whole batch.

Batch size changes only the grouping, never a result beyond floating-point reassociation (tests pin this).
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Sequence

from pytest_genai.evals.windows import Window


@dataclasses.dataclass(frozen=True)
class Score:
    """Summed natural-log probability of a continuation, its token count, and whether every token was greedy."""

    logprob: float
    n_tokens: int
    is_greedy: bool


@dataclasses.dataclass(frozen=True)
class ScoreRun:
    """Scores in request order, plus the work done: model input tokens (no padding) and forward calls."""

    scores: tuple[Score, ...]
    input_tokens: int
    forward_calls: int


def model_input(request: Window, max_length: int) -> tuple[tuple[int, ...], int]:
    """The model input of a request and the number of scored positions at its end (lm-eval's left truncation)."""
    if not request.continuation:
        raise ValueError("a request must have at least one continuation token to score")
    if not request.context:
        raise ValueError("a request needs at least one context token (use the prefix token for an empty context)")
    if len(request.continuation) > max_length:
        raise ValueError(f"continuation of {len(request.continuation)} tokens exceeds max_length={max_length}; "
                         "raise max_length or split it into rolling windows")
    full = request.context + request.continuation
    return full[-(max_length + 1):][:-1], len(request.continuation)


def logits_arg(model: Any) -> str | None:
    """The keyword the model's forward takes to compute only some positions' logits, if any."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - unusual wrappers
        return None
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return name
    return None


def score_requests(model: Any, requests: Sequence[Window], *, max_length: int, batch_size: int = 8,
                   device: Any = None, pad_token_id: int = 0) -> ScoreRun:
    """Score every request; see the module docstring. ``device`` defaults to the model's parameters' device."""
    import torch

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    if device is None:
        device = next(model.parameters()).device

    # unique inputs -> the positions each request scores in it
    inputs: dict[tuple[int, ...], int] = {}
    plan: list[tuple[int, int, tuple[int, ...]]] = []  # (input index, first scored position, targets)
    for request in requests:
        inp, n_cont = model_input(request, max_length)
        idx = inputs.setdefault(inp, len(inputs))
        plan.append((idx, len(inp) - n_cont, request.continuation))
    unique = list(inputs)
    needed: list[set[int]] = [set() for _ in unique]
    for idx, start, targets in plan:
        needed[idx].update(range(start, start + len(targets)))

    order = sorted(range(len(unique)), key=lambda i: (-len(unique[i]), unique[i]))
    keep_arg = logits_arg(model)
    # per unique input: position -> (logsumexp, logits row gathered later); store per-position results lazily
    lse: list[dict[int, float]] = [dict() for _ in unique]
    target_logit: dict[tuple[int, int, int], float] = {}
    greedy: list[dict[int, int]] = [dict() for _ in unique]
    wanted_targets: list[dict[int, set[int]]] = [dict() for _ in unique]
    for idx, start, targets in plan:
        for offset, tok in enumerate(targets):
            wanted_targets[idx].setdefault(start + offset, set()).add(tok)

    calls = 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for b in range(0, len(order), batch_size):
                batch = order[b: b + batch_size]
                width = len(unique[batch[0]])
                ids = torch.full((len(batch), width), pad_token_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, : len(unique[i])] = torch.tensor(unique[i], dtype=torch.long)
                    mask[row, : len(unique[i])] = 1
                positions = sorted(set().union(*(needed[i] for i in batch)))
                kwargs: dict[str, Any] = {"input_ids": ids.to(device), "use_cache": False}
                if not bool(mask.all()):
                    kwargs["attention_mask"] = mask.to(device)
                if keep_arg and len(positions) < width:
                    kwargs[keep_arg] = torch.tensor(positions, dtype=torch.long, device=device)
                    column = {p: c for c, p in enumerate(positions)}
                else:
                    column = {p: p for p in range(width)}
                logits = model(**kwargs).logits
                calls += 1
                for row, i in enumerate(batch):
                    cols = sorted(needed[i])
                    sel = logits[row, [column[p] for p in cols]].float()
                    row_lse = torch.logsumexp(sel, dim=-1).tolist()
                    row_arg = sel.argmax(dim=-1).tolist()
                    pairs = [(c, p, t) for c, p in enumerate(cols) for t in sorted(wanted_targets[i][p])]
                    picked = sel[[c for c, _, _ in pairs], [t for _, _, t in pairs]].tolist()
                    for (c, p, t), value in zip(pairs, picked):
                        target_logit[(i, p, t)] = value
                    for c, p in enumerate(cols):
                        lse[i][p] = row_lse[c]
                        greedy[i][p] = row_arg[c]
                del logits
    finally:
        model.train(was_training)

    scores = []
    for idx, start, targets in plan:
        logprob = 0.0
        all_greedy = True
        for offset, tok in enumerate(targets):
            p = start + offset
            logprob += target_logit[(idx, p, tok)] - lse[idx][p]
            all_greedy = all_greedy and greedy[idx][p] == tok
        scores.append(Score(logprob, len(targets), all_greedy))
    return ScoreRun(tuple(scores), input_tokens=sum(len(u) for u in unique), forward_calls=calls)
