"""Batched log-likelihood scoring of (context, continuation) token requests with a causal LM.

What it computes matches lm-evaluation-harness's ``HFLM._loglikelihood_tokens``: the model input is
``(context + continuation)[-(max_length + 1):][:-1]`` and the score is the summed log-probability of the
continuation tokens, plus whether each was the greedy (argmax) token. How it computes it is leaner:

* requests with the same context (of two tokens or more: ``MIN_SHARED_CONTEXT``) share it: the context and all
  its continuations form one packed sequence (``context + cont_0[:-1] + cont_1[:-1] + ...``, position ids
  restarting after the context for each continuation, a mask that lets a continuation see the context and itself
  only), so the context runs once and several such sequences fill one batched call (HellaSwag's four endings;
  BoolQ's " no"/" yes" need the context's last logits only). Models without a 4D-mask path run the context once
  and its continuations on its key/value cache;
* inputs are sorted by length and right-padded, so padding never precedes a scored token, and the attention mask
  keeps padded positions out of every real token's attention; padded positions are never scored;
* logits are computed only at the positions that are scored (``logits_to_keep``), and log-probabilities come from
  ``logit[target] - logsumexp(logits)`` without materializing a log-softmax of the whole batch.

Batch size changes only the grouping, never a result beyond floating-point reassociation (tests pin this).
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
from typing import Any, Sequence

from pytest_genai import progress
from pytest_genai.evals.windows import Window


#: Requests share a context only when it has at least this many tokens. A one-token context (the prefix token of
#: every document's first rolling window, or a sliding window's previous token) saves one token per request when
#: shared, and packing turns the requests' short causal rows into one wide row under a ready-made mask, whose
#: attention covers every pair of its tokens: SmolLM2's tiny WikiText rolling pass took 3.3-3.4 s so, 3.2 s batched.
MIN_SHARED_CONTEXT = 2


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
                   device: Any = None, pad_token_id: int = 0, share_context: bool = True) -> ScoreRun:
    """Score every request; see the module docstring. ``device`` defaults to the model's parameters' device.

    ``share_context``: requests with the same context (of ``MIN_SHARED_CONTEXT`` tokens or more, and no left
    truncation) run the context once and reuse its key/value cache for their continuations; the rest are batched.
    Same numbers either way, up to floating-point reassociation (tests pin it)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    for request in requests:
        model_input(request, max_length)  # validate every request up front
    if device is None:
        device = next(model.parameters()).device

    groups: dict[tuple[int, ...], list[int]] = {}
    if share_context and (packs_prefixes(model, device) or cache_arg(model)):
        for i, request in enumerate(requests):
            if len(request.context) >= MIN_SHARED_CONTEXT and \
                    len(request.context) + len(request.continuation) - 1 <= max_length:
                groups.setdefault(request.context, []).append(i)
        groups = {ctx: members for ctx, members in groups.items() if len(members) > 1}
    shared = {i for members in groups.values() for i in members}
    rest = [i for i in range(len(requests)) if i not in shared]

    scores: list[Score | None] = [None] * len(requests)
    tokens = calls = 0
    was_training = model.training
    model.eval()
    try:
        if rest:
            run = _score_batched(model, [requests[i] for i in rest], max_length=max_length, batch_size=batch_size,
                                 device=device, pad_token_id=pad_token_id)
            for i, score in zip(rest, run.scores):
                scores[i] = score
            tokens, calls = run.input_tokens, run.forward_calls
        window = getattr(getattr(model, "config", None), "sliding_window", None)
        if window and any(len(packed_layout(ctx, [requests[i].continuation for i in members])[0]) > window
                          for ctx, members in groups.items()):
            pack = False  # a ready-made mask replaces the model's sliding-window mask: keep packed rows inside it
        else:
            pack = packs_prefixes(model, device)
        if groups and pack:
            packed = [(context, [requests[i].continuation for i in members]) for context, members in groups.items()]
            group_scores, group_tokens, group_calls = _score_packed(model, packed, batch_size=batch_size,
                                                                    device=device, pad_token_id=pad_token_id)
            for members, member_scores in zip(groups.values(), group_scores):
                for i, score in zip(members, member_scores):
                    scores[i] = score
            tokens += group_tokens
            calls += group_calls
        else:
            for context, members in groups.items():
                member_scores, group_tokens, group_calls = _score_shared_context(
                    model, context, [requests[i].continuation for i in members], device=device,
                    pad_token_id=pad_token_id)
                for i, score in zip(members, member_scores):
                    scores[i] = score
                tokens += group_tokens
                calls += group_calls
    finally:
        model.train(was_training)
    return ScoreRun(tuple(scores), input_tokens=tokens, forward_calls=calls)  # type: ignore[arg-type]


def cache_arg(model: Any) -> str | None:
    """The keyword the model's forward takes a key/value cache by (``cache`` in transformers 5.x,
    ``past_key_values`` before), if it takes one together with masks and positions."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return None
    if not all(name in params for name in ("use_cache", "position_ids", "attention_mask")):
        return None
    return next((name for name in ("cache", "past_key_values") if name in params), None)


def _output_cache(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def _log_probs(logits: Any, targets: Sequence[int]) -> tuple[float, bool]:
    """Summed log-probability of ``targets`` under rows of ``logits`` (one row per target) and all-greedy flag."""
    import torch

    rows = logits.float()
    lse = torch.logsumexp(rows, dim=-1)
    picked = rows[torch.arange(len(targets)), torch.tensor(list(targets), device=rows.device)]
    greedy = bool((rows.argmax(dim=-1).cpu() == torch.tensor(list(targets))).all())
    return float((picked.double() - lse.double()).sum()), greedy


def _score_shared_context(model: Any, context: tuple[int, ...], continuations: Sequence[tuple[int, ...]], *,
                          device: Any, pad_token_id: int) -> tuple[list[Score], int, int]:
    """Run ``context`` once; score each continuation from its last logits plus one batched pass over the
    continuations' remaining tokens on top of the context's key/value cache."""
    import torch

    keep_arg = logits_arg(model)
    with torch.inference_mode():
        kwargs: dict[str, Any] = {"input_ids": torch.tensor([context], device=device), "use_cache": True}
        if keep_arg:
            kwargs[keep_arg] = 1
        out = model(**kwargs)
        first = out.logits[0, -1]
        calls, tokens = 1, len(context)
        results: list[tuple[float, bool]] = [_log_probs(first.expand(1, -1), cont[:1]) for cont in continuations]
        longer = [k for k, cont in enumerate(continuations) if len(cont) > 1]
        if longer:
            cache = _output_cache(out)
            if len(longer) > 1:
                cache.batch_repeat_interleave(len(longer))
            width = max(len(continuations[k]) - 1 for k in longer)
            ids = torch.full((len(longer), width), pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(longer), len(context) + width), dtype=torch.long)
            mask[:, : len(context)] = 1
            for row, k in enumerate(longer):
                rest = continuations[k][:-1]
                ids[row, : len(rest)] = torch.tensor(rest, dtype=torch.long)
                mask[row, len(context): len(context) + len(rest)] = 1
            positions = torch.arange(len(context), len(context) + width).expand(len(longer), -1)
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                           use_cache=True, **{cache_arg(model): cache}).logits
            calls += 1
            tokens += sum(len(continuations[k]) - 1 for k in longer)
            for row, k in enumerate(longer):
                cont = continuations[k]
                lp, greedy = _log_probs(logits[row, : len(cont) - 1], cont[1:])
                first_lp, first_greedy = results[k]
                results[k] = (first_lp + lp, first_greedy and greedy)
        del out
    return [Score(lp, len(cont), greedy) for (lp, greedy), cont in zip(results, continuations)], tokens, calls


def packs_prefixes(model: Any, device: Any = None) -> bool:
    """True when the model takes position ids and a ready-made 4D attention mask (transformers' own ``sdpa`` and
    ``eager`` attention use such a mask as given), so a context and its continuations can share one sequence.
    Only on the CPU and CUDA, where that is transformers' own code path (Gaudi's model classes are optimum-habana's)."""
    kind = "cpu" if device is None else getattr(device, "type", str(device).split(":")[0])
    if kind not in ("cpu", "cuda"):
        return False
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False
    config = getattr(model, "config", None)
    attention = getattr(config, "_attn_implementation", None)
    return "position_ids" in params and "attention_mask" in params and attention in ("sdpa", "eager")


def packed_layout(context: Sequence[int], continuations: Sequence[Sequence[int]]) -> tuple[
        list[int], list[int], list[int], list[list[int]]]:
    """One sequence for a context and its continuations: ``context + cont_0[:-1] + cont_1[:-1] + ...``.

    Returns the tokens, their position ids (each continuation continues the context's positions), their segment
    (-1: context, k: continuation k) and, per continuation, the positions whose logits predict its tokens (the
    context's last position for the first token, then the continuation's own positions)."""
    tokens, positions, segments = list(context), list(range(len(context))), [-1] * len(context)
    scored = []
    for k, cont in enumerate(continuations):
        start = len(tokens)
        rest = list(cont[:-1])
        tokens += rest
        positions += range(len(context), len(context) + len(rest))
        segments += [k] * len(rest)
        scored.append([len(context) - 1] + list(range(start, start + len(rest))))
    return tokens, positions, segments, scored


def prefix_mask(segments: Any, dtype: Any = None) -> Any:
    """``[B, 1, W, W]`` attention mask for packed rows (segment -2 marks padding): a token sees earlier context
    tokens and earlier tokens of its own continuation, never another continuation or padding. Padded queries see
    themselves only (their outputs are never scored). Boolean (True = attend, what SDPA takes whatever the
    activations' dtype) when ``dtype`` is None, else additive in ``dtype`` (0 or its most negative value, what
    transformers' eager attention adds to the scores)."""
    import torch

    width = segments.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool, device=segments.device).tril()
    key, query = segments[:, None, :], segments[:, :, None]
    allow = causal & ((key == -1) | (key == query)) & (key != -2) & (query != -2)
    allow |= torch.eye(width, dtype=torch.bool, device=segments.device)
    if dtype is None:
        return allow[:, None]
    mask = torch.zeros(allow.shape, dtype=dtype, device=segments.device)
    mask.masked_fill_(~allow, torch.finfo(dtype).min)
    return mask[:, None]


def _mask_dtype(model: Any) -> Any:
    """None (a boolean mask) for SDPA attention; for eager attention, the dtype its scores are computed in (the
    input embeddings')."""
    if getattr(getattr(model, "config", None), "_attn_implementation", None) != "eager":
        return None
    return model.get_input_embeddings().weight.dtype


def _forward_at(model: Any, positions: Sequence[int], width: int, keep_arg: str | None, device: Any,
                **inputs: Any) -> tuple[Any, dict[int, int]]:
    """One forward computing logits only at ``positions`` (sorted) when the model can; the logits and the map
    from a position to its column in them."""
    import torch

    if keep_arg and len(positions) < width:
        inputs[keep_arg] = torch.tensor(list(positions), dtype=torch.long, device=device)
        column = {p: c for c, p in enumerate(positions)}
    else:
        column = {p: p for p in range(width)}
    return model(**inputs, use_cache=False).logits, column


def _score_packed(model: Any, groups: Sequence[tuple[tuple[int, ...], Sequence[tuple[int, ...]]]], *,
                  batch_size: int, device: Any, pad_token_id: int) -> tuple[list[list[Score]], int, int]:
    """Each context with its continuations as one packed sequence (:func:`packed_layout`), ``batch_size``
    sequences per call, longest first, logits only at scored positions."""
    import torch

    layouts = [packed_layout(context, continuations) for context, continuations in groups]
    order = sorted(range(len(groups)), key=lambda g: -len(layouts[g][0]))
    keep_arg = logits_arg(model)
    mask_dtype = _mask_dtype(model)
    results: list[list[Score]] = [[] for _ in groups]
    calls = 0
    with torch.inference_mode():
        for b in progress.steps(range(0, len(order), batch_size), "scoring", unit="batch", level=logging.DEBUG):
            batch = order[b: b + batch_size]
            width = len(layouts[batch[0]][0])
            ids = torch.full((len(batch), width), pad_token_id, dtype=torch.long)
            pos = torch.zeros((len(batch), width), dtype=torch.long)
            seg = torch.full((len(batch), width), -2, dtype=torch.long)
            for row, g in enumerate(batch):
                toks, positions, segments, _ = layouts[g]
                ids[row, : len(toks)] = torch.tensor(toks, dtype=torch.long)
                pos[row, : len(toks)] = torch.tensor(positions, dtype=torch.long)
                seg[row, : len(toks)] = torch.tensor(segments, dtype=torch.long)
            wanted = sorted({p for g in batch for cols in layouts[g][3] for p in cols})
            logits, column = _forward_at(model, wanted, width, keep_arg, device, input_ids=ids.to(device),
                                         position_ids=pos.to(device),
                                         attention_mask=prefix_mask(seg.to(device), mask_dtype))
            calls += 1
            for row, g in enumerate(batch):
                for cont, cols in zip(groups[g][1], layouts[g][3]):
                    lp, greedy = _log_probs(logits[row, [column[p] for p in cols]], cont)
                    results[g].append(Score(lp, len(cont), greedy))
            del logits
    return results, sum(len(layout[0]) for layout in layouts), calls


def _score_batched(model: Any, requests: Sequence[Window], *, max_length: int, batch_size: int, device: Any,
                   pad_token_id: int) -> ScoreRun:
    """Right-padded batches of unique inputs, longest first; logits only where scored."""
    import torch

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
    with torch.inference_mode():
        for b in progress.steps(range(0, len(order), batch_size), "scoring", unit="batch", level=logging.DEBUG):
            batch = order[b: b + batch_size]
            width = len(unique[batch[0]])
            ids = torch.full((len(batch), width), pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, : len(unique[i])] = torch.tensor(unique[i], dtype=torch.long)
                mask[row, : len(unique[i])] = 1
            positions = sorted(set().union(*(needed[i] for i in batch)))
            extra = {} if bool(mask.all()) else {"attention_mask": mask.to(device)}
            logits, column = _forward_at(model, positions, width, keep_arg, device, input_ids=ids.to(device), **extra)
            calls += 1
            for row, i in enumerate(batch):
                cols = sorted(needed[i])
                idx = [column[p] for p in cols]
                if idx == list(range(idx[0], idx[0] + len(idx))):
                    sel = logits[row, idx[0]: idx[0] + len(idx)].float()  # a view: no copy of the vocab-wide rows
                else:
                    sel = logits[row, idx].float()
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
