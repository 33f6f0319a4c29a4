"""Analytic training FLOPs, pinned by hand and cross-checked with torch's flop counter."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.train.archs import PAPER_ARCHS, get_arch
from pytest_genai.train.flops import counted_training_flops, training_flops_per_step, training_flops_per_token


def test_hand_computed_tiny_llama():
    arch = get_arch("llama-3.1-8b", "tiny")  # L=4, H=64, q=64, kv=16, F=224, V=1024
    layer = 64 * (64 + 2 * 16) + 64 * 64 + 3 * 64 * 224  # q,k,v + o + gate/up/down
    n_matmul = 4 * layer + 1024 * 64  # + LM head
    assert arch.matmul_params() == n_matmul
    assert training_flops_per_token(arch, 128) == 6 * n_matmul + 12 * 4 * 128 * 64
    assert training_flops_per_step(arch, 128, 4) == 4 * 128 * (6 * n_matmul + 12 * 4 * 128 * 64)


@pytest.mark.parametrize("name", sorted(PAPER_ARCHS))
@pytest.mark.parametrize("scale", ["tiny", "full"])
def test_analytic_flops_equal_the_flop_counter(name, scale):
    """torch's FlopCounterMode on one forward+backward (meta device) counts exactly the analytic formula."""
    arch = get_arch(name, scale)
    assert counted_training_flops(arch, seq_len=64, batch=2) == training_flops_per_step(arch, 64, 2)


def test_counter_agrees_for_sdpa_attention_too():
    arch = get_arch("llama-3.1-8b", "tiny")
    assert counted_training_flops(arch, 32, 1, attention="sdpa") == training_flops_per_step(arch, 32, 1)


@settings(max_examples=25, deadline=None)
@given(seq=st.integers(1, 4096), batch=st.integers(1, 64), name=st.sampled_from(sorted(PAPER_ARCHS)))
def test_flops_are_linear_in_batch_and_grow_with_sequence(seq, batch, name):
    arch = PAPER_ARCHS[name]
    assert training_flops_per_step(arch, seq, batch) == batch * training_flops_per_step(arch, seq, 1)
    assert training_flops_per_token(arch, seq + 1) > training_flops_per_token(arch, seq)
    assert training_flops_per_token(arch, seq) >= 6 * arch.matmul_params()


def test_bad_sizes_are_rejected():
    arch = get_arch("llama-3.1-8b", "tiny")
    with pytest.raises(ValueError, match="seq_len"):
        training_flops_per_token(arch, 0)
    with pytest.raises(ValueError, match="global_batch"):
        training_flops_per_step(arch, 8, 0)
