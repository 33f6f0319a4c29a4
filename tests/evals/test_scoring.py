import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals.scoring import logits_arg, model_input, score_requests
from pytest_genai.evals.windows import Window

from .conftest import VOCAB


def reference_logprob(model, context, continuation, max_length):
    """Straightforward lm-eval arithmetic: one unpadded sequence, full logits, log_softmax, gather."""
    import torch

    inp = (list(context) + list(continuation))[-(max_length + 1):][:-1]
    with torch.no_grad():
        logits = model(torch.tensor([inp])).logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1)[-len(continuation):]
    return float(logp[torch.arange(len(continuation)), torch.tensor(continuation)].sum())


def _requests(seed, n=7):
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ctx = tuple(rng.randrange(VOCAB) for _ in range(rng.randint(1, 20)))
        cont = tuple(rng.randrange(VOCAB) for _ in range(rng.randint(1, 6)))
        out.append(Window(ctx, cont))
    return out


def test_scores_equal_the_plain_unbatched_computation(model):
    requests = _requests(0)
    run = score_requests(model, requests, max_length=16, batch_size=3)
    for req, score in zip(requests, run.scores):
        assert score.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 16), abs=1e-4)
        assert score.n_tokens == len(req.continuation)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), batch_size=st.integers(1, 9))
def test_batch_size_does_not_change_any_score(model, seed, batch_size):
    requests = _requests(seed)
    one = score_requests(model, requests, max_length=24, batch_size=1)
    many = score_requests(model, requests, max_length=24, batch_size=batch_size)
    for a, b in zip(one.scores, many.scores):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
        assert a.is_greedy == b.is_greedy
    assert one.input_tokens == many.input_tokens  # padding is never counted as work


def test_logits_only_at_scored_positions_equal_full_logits(model):
    import torch

    class NoKeep(torch.nn.Module):  # a model whose forward cannot skip positions
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask=None, use_cache=False):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache)

    assert logits_arg(model) == "logits_to_keep" and logits_arg(NoKeep(model)) is None
    requests = _requests(3)
    a = score_requests(model, requests, max_length=24, batch_size=4)
    b = score_requests(NoKeep(model), requests, max_length=24, batch_size=4)
    assert [s.logprob for s in a.scores] == pytest.approx([s.logprob for s in b.scores], abs=1e-4)


def test_long_requests_are_truncated_from_the_left_like_lm_eval(model):
    req = Window(tuple(range(30)), (5, 6, 7))
    inp, n = model_input(req, max_length=10)
    assert inp == tuple(range(30))[-8:] + (5, 6) and n == 3
    score = score_requests(model, [req], max_length=10).scores[0]
    assert score.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 10), abs=1e-4)


def test_identical_inputs_run_once(model):
    ctx = (1, 2, 3, 4)
    run = score_requests(model, [Window(ctx, (9,)), Window(ctx, (10,))], max_length=16)
    assert run.input_tokens == 4 and run.forward_calls == 1
    # one-token continuations from the same input: their probabilities come from one distribution
    total = math.exp(run.scores[0].logprob) + math.exp(run.scores[1].logprob)
    assert 0 < total <= 1.0 + 1e-6


def test_greedy_flag(model):
    import torch

    ctx = (5, 6, 7)
    with torch.no_grad():
        best = int(model(torch.tensor([ctx])).logits[0, -1].argmax())
    run = score_requests(model, [Window(ctx, (best,)), Window(ctx, ((best + 1) % VOCAB,))], max_length=8)
    assert run.scores[0].is_greedy and not run.scores[1].is_greedy


@pytest.mark.parametrize("req, match", [
    (Window((), (1,)), "context token"),
    (Window((1,), ()), "continuation token"),
    (Window((1,), tuple(range(20))), "exceeds max_length"),
])
def test_bad_requests_say_what_to_do(model, req, match):
    with pytest.raises(ValueError, match=match):
        score_requests(model, [req], max_length=8)


def _grouped_requests(seed):
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(3):
        ctx = tuple(rng.randrange(VOCAB) for _ in range(rng.randint(1, 12)))
        for _ in range(rng.randint(1, 4)):  # several continuations of one context, as in HellaSwag
            out.append(Window(ctx, tuple(rng.randrange(VOCAB) for _ in range(rng.randint(1, 6)))))
    rng.shuffle(out)
    return out


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000))
def test_shared_context_scores_equal_independent_sequences(model, seed):
    requests = _grouped_requests(seed)
    shared = score_requests(model, requests, max_length=16, batch_size=2, share_context=True)
    plain = score_requests(model, requests, max_length=16, batch_size=2, share_context=False)
    for req, a, b in zip(requests, shared.scores, plain.scores):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
        assert a.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 16), abs=1e-4)
        assert (a.n_tokens, a.is_greedy) == (b.n_tokens, b.is_greedy)
    assert shared.input_tokens <= plain.input_tokens  # each shared context is run once


def test_a_context_shared_by_four_endings_runs_once(model):
    ctx = tuple(range(1, 11))
    endings = [(20, 21, 22), (30, 31), (40,), (50, 51, 52, 53)]
    run = score_requests(model, [Window(ctx, e) for e in endings], max_length=32)
    assert run.forward_calls == 1  # one packed sequence: the context, then each ending's tokens
    assert run.input_tokens == len(ctx) + sum(len(e) - 1 for e in endings)
    for req, score in zip([Window(ctx, e) for e in endings], run.scores):
        assert score.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 32), abs=1e-4)


def test_packed_contexts_fill_batches(model):
    requests = [Window(tuple(range(1 + g, 8 + 2 * g)), e) for g in range(5) for e in [(20, 21), (30,), (40, 41, 42)]]
    one = score_requests(model, requests, max_length=32, batch_size=1)
    four = score_requests(model, requests, max_length=32, batch_size=4)
    assert (one.forward_calls, four.forward_calls) == (5, 2)
    assert one.input_tokens == four.input_tokens
    for a, b, req in zip(one.scores, four.scores, requests):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
        assert a.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 32), abs=1e-4)
        assert a.is_greedy == b.is_greedy


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_packed_scores_match_independent_sequences_for_each_attention(attention):
    import torch

    from pytest_genai.evals.scoring import packs_prefixes

    from .conftest import tiny_llama

    model = tiny_llama(seed=3)
    model.config._attn_implementation = attention
    assert packs_prefixes(model)
    assert not packs_prefixes(model, torch.device("meta"))  # only cpu / cuda
    assert not packs_prefixes(model, "hpu:0") and packs_prefixes(model, "cpu")
    ctx = tuple(range(1, 9))
    endings = [(20, 21, 22), (30, 31), (40,)]
    run = score_requests(model, [Window(ctx, e) for e in endings], max_length=32)
    assert run.forward_calls == 1
    for e, score in zip(endings, run.scores):
        assert score.logprob == pytest.approx(reference_logprob(model, ctx, e, 32), abs=1e-4)


def test_packing_stays_inside_a_sliding_window(model, monkeypatch):
    from pytest_genai.evals import scoring

    ctx = tuple(range(1, 11))
    endings = [(20, 21, 22), (30, 31), (40,), (50, 51, 52, 53)]  # packed row: 10 + 2 + 1 + 0 + 3 = 16 tokens
    requests = [Window(ctx, e) for e in endings]
    monkeypatch.setattr(model.config, "sliding_window", 16, raising=False)
    assert score_requests(model, requests, max_length=32).forward_calls == 1
    monkeypatch.setattr(model.config, "sliding_window", 15, raising=False)
    run = score_requests(model, requests, max_length=32)
    assert run.forward_calls == 2  # the KV-cache path: the model applies its own window
    for req, score in zip(requests, run.scores):
        assert score.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 32), abs=1e-4)


def test_models_without_a_4d_mask_path_share_the_context_through_its_cache(model, monkeypatch):
    from pytest_genai.evals import scoring

    ctx = tuple(range(1, 11))
    endings = [(20, 21, 22), (30, 31), (40,), (50, 51, 52, 53)]
    packed = score_requests(model, [Window(ctx, e) for e in endings], max_length=32)
    monkeypatch.setattr(scoring, "packs_prefixes", lambda m, d=None: False)
    cached = score_requests(model, [Window(ctx, e) for e in endings], max_length=32)
    assert cached.forward_calls == 2  # the context, then the endings' remaining tokens on its cache
    assert cached.input_tokens == packed.input_tokens
    for a, b in zip(packed.scores, cached.scores):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)


def test_packed_layout_and_mask():
    import torch

    from pytest_genai.evals.scoring import packed_layout, prefix_mask

    toks, pos, seg, scored = packed_layout((5, 6, 7), [(8, 9), (10,), (11, 12, 13)])
    assert toks == [5, 6, 7, 8, 11, 12]
    assert pos == [0, 1, 2, 3, 3, 4]
    assert seg == [-1, -1, -1, 0, 2, 2]
    assert scored == [[2, 3], [2], [2, 4, 5]]
    segments = torch.tensor([seg + [-2]])
    mask = prefix_mask(segments)[0, 0]
    assert mask.dtype == torch.bool
    assert torch.equal(prefix_mask(segments, torch.float32)[0, 0] == 0, mask)  # the additive form, same pattern
    allowed = {i: [j for j in range(7) if mask[i, j]] for i in range(7)}
    assert allowed[3] == [0, 1, 2, 3]          # continuation 0 sees the context and itself
    assert allowed[4] == [0, 1, 2, 4]          # continuation 2 does not see continuation 0
    assert allowed[5] == [0, 1, 2, 4, 5]
    assert allowed[6] == [6]                   # padding sees only itself


def test_a_one_token_context_is_not_shared(model, monkeypatch):
    """Documents' first rolling windows all start from the prefix token: sharing it would save one token per window
    and pack the windows into one wide masked row. They are batched as plain causal rows instead."""
    from pytest_genai.evals import scoring

    def refuse(*args, **kwargs):
        raise AssertionError("a one-token context was packed")

    monkeypatch.setattr(scoring, "_score_packed", refuse)
    monkeypatch.setattr(scoring, "_score_shared_context", refuse)
    requests = [Window((0,), tuple(range(10 + d, 18 + d))) for d in range(3)]
    run = score_requests(model, requests, max_length=32, batch_size=4)
    assert run.forward_calls == 1 and run.input_tokens == 3 * 8
    for req, score in zip(requests, run.scores):
        assert score.logprob == pytest.approx(reference_logprob(model, req.context, req.continuation, 32), abs=1e-4)
    two = [Window((0, 1), e) for e in ((20, 21), (30, 31))]  # two tokens: shared, one packed row
    monkeypatch.undo()
    assert score_requests(model, two, max_length=32).input_tokens == 2 + 1 + 1
