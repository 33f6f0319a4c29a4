"""Tensor-parallel shards computed on threads (ThreadGroup) equal the full block, forward and backward (float64)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.model import build_stack, make_input
from pytest_genai.dabench.level2.tensor_parallel import shard_slices, shard_stack
from threadgroup import ThreadGroup

torch.set_num_threads(1)


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def run_tp(cfg, world, all_reduce_of=lambda comm: comm.all_reduce):
    full = build_stack(cfg, "cpu").double()
    x = make_input(cfg, "cpu").double().requires_grad_(True)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    ref = full(x)
    ref.backward(g)

    def rank(comm):
        tp = shard_stack(full, comm.rank, world, all_reduce_of(comm))
        x2 = x.detach().clone().requires_grad_(True)
        out = tp(x2)
        out.backward(g)
        return out.detach(), x2.grad, tp

    return full, x, ref.detach(), ThreadGroup(world).run(rank)


@pytest.mark.parametrize("attention", ["math", "sdpa"])
@pytest.mark.parametrize("world", [2, 4])
def test_tp_equals_full_block(world, attention):
    cfg = DecoderConfig(layers=2, hidden=32, heads=4, seq_len=8, batch=2, mode="train", attention=attention)
    full, x, ref, results = run_tp(cfg, world)
    for r, (out, xgrad, tp) in enumerate(results):
        assert rel(out, ref) < 1e-12
        assert rel(xgrad, x.grad) < 1e-12
        s = shard_slices(cfg.hidden, cfg.heads, cfg.ffn_hidden, r, world)
        rows = torch.cat([torch.arange(q.start, q.stop) for q in s["qkv_rows"]])
        f = slice(s["fc1_rows"].start, s["fc1_rows"].stop)
        for fb, tb in zip(full.blocks, tp):
            assert rel(tb.qkv.weight.grad, fb.qkv.weight.grad[rows]) < 1e-12
            assert rel(tb.fc2.weight.grad, fb.fc2.weight.grad[:, f]) < 1e-12
            assert rel(tb.ln1.weight.grad, fb.ln1.weight.grad) < 1e-12


def test_a_missing_all_reduce_is_caught():
    """The check has teeth: without the sum over ranks the output is wrong by order 1."""
    cfg = DecoderConfig(layers=1, hidden=32, heads=2, seq_len=8, batch=1, mode="train")
    _, _, ref, results = run_tp(cfg, 2, all_reduce_of=lambda comm: (lambda t: t))
    assert rel(results[0][0], ref) > 1e-3


def test_two_all_reduces_per_block_each_way():
    cfg = DecoderConfig(layers=3, hidden=32, heads=2, seq_len=8, batch=1, mode="train")
    group = ThreadGroup(2)
    full = build_stack(cfg, "cpu")
    x = make_input(cfg, "cpu")

    def rank(comm):
        shard_stack(full, comm.rank, 2, comm.all_reduce)(x).sum().backward()

    group.run(rank)
    assert group.calls == [4 * cfg.layers] * 2


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(1, 8))
def test_shards_tile_the_weights(world, heads_per_rank, head_dim):
    heads = world * heads_per_rank
    hidden = heads * head_dim
    ffn = 4 * hidden
    parts = [shard_slices(hidden, heads, ffn, r, world) for r in range(world)]
    qkv = sorted(i for p in parts for rng in p["qkv_rows"] for i in rng)
    assert qkv == list(range(3 * hidden))
    assert sorted(i for p in parts for i in p["proj_cols"]) == list(range(hidden))
    assert sorted(i for p in parts for i in p["fc1_rows"]) == list(range(ffn))


def test_shard_slices_errors():
    with pytest.raises(ValueError, match="divisible by world=3"):
        shard_slices(64, 4, 256, 0, 3)
    with pytest.raises(ValueError, match="rank=2"):
        shard_slices(64, 4, 256, 2, 2)
