"""Analytic training FLOPs, pinned by hand and cross-checked with torch's flop counter."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.train.archs import PAPER_ARCHS, get_arch
from pytest_genai.train.flops import (
    counted_training_flops, lora_training_flops_per_token, training_flops_per_step, training_flops_per_token,
)
from pytest_genai.train.lora import LoraSpec
from pytest_genai.train.requirements import installed


def test_hand_computed_tiny_llama():
    arch = get_arch("llama-3.1-8b", "tiny")  # L=4, H=64, q=64, kv=16, F=224, V=1024
    layer = 64 * (64 + 2 * 16) + 64 * 64 + 3 * 64 * 224  # q,k,v + o + gate/up/down
    n_matmul = 4 * layer + 1024 * 64  # + LM head
    assert arch.matmul_params() == n_matmul
    assert training_flops_per_token(arch, 128) == 6 * n_matmul + 12 * 4 * 128 * 64
    assert training_flops_per_step(arch, 128, 4) == 4 * 128 * (6 * n_matmul + 12 * 4 * 128 * 64)


@pytest.mark.parametrize("name", sorted(PAPER_ARCHS))
@pytest.mark.parametrize("scale", ["tiny", "full"])
@pytest.mark.slow
def test_analytic_flops_equal_the_flop_counter(name, scale):
    """torch's FlopCounterMode on one forward+backward (meta device) counts exactly the analytic formula."""
    arch = get_arch(name, scale)
    assert counted_training_flops(arch, seq_len=64, batch=2) == training_flops_per_step(arch, 64, 2)


def test_counter_agrees_for_sdpa_attention_too():
    arch = get_arch("llama-3.1-8b", "tiny")
    assert counted_training_flops(arch, 32, 1, attention="sdpa") == training_flops_per_step(arch, 32, 1)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gemma-2-27b"])
def test_a_rotary_table_built_by_matmul_is_not_model_work(monkeypatch, name):
    """transformers 5.17 builds the RoPE frequency table with a batched matmul (inv_freq @ positions), 5.24
    elementwise; on the first H200 run the counter then read B*S*head_dim FLOPs over the analytic count (2048 for the
    tiny Llama at 2x128) and every fine-tune row failed its cross-check. The 5.17 form is put back here."""
    import torch

    def matmul_table(self, x, position_ids):
        inv = self.inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1).to(dtype=torch.float, device=x.device)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    family = {"llama-3.1-8b": "llama", "gemma-2-27b": "gemma2"}[name]
    module = __import__(f"transformers.models.{family}.modeling_{family}", fromlist=["_"])
    rotary = next(v for k, v in vars(module).items() if k.endswith("RotaryEmbedding"))
    monkeypatch.setattr(rotary, "forward", matmul_table)
    arch = get_arch(name, "tiny")
    assert counted_training_flops(arch, 128, 2) == training_flops_per_step(arch, 128, 2)


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


QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")


def test_lora_flops_by_hand_tiny_llama():
    """LoRA: base forward 2N + activation gradients 2N (no frozen-weight gradients), adapters 6 N_lora, attention
    12 L S d; layer 0's q/k/v (and their lora_A) compute no input gradient (nothing below them trains)."""
    arch = get_arch("llama-3.1-8b", "tiny")  # L=4, H=64, q=64, kv=16, r=8
    n = arch.matmul_params()
    n_lora = 4 * 8 * ((64 + 64) + 2 * (64 + 16) + (64 + 64))
    first_qkv = 64 * (64 + 2 * 16)
    expected = 4 * n - 2 * first_qkv + 6 * n_lora - 2 * 8 * 3 * 64 + 12 * 4 * 128 * 64
    assert lora_training_flops_per_token(arch, 128, 8, QKVO) == expected
    assert training_flops_per_step(arch, 128, 2, lora=LoraSpec(rank=8)) == 2 * 128 * expected
    # about two thirds of full fine-tuning at paper scale (no weight gradients for 2N of the 6N)
    full_8b = PAPER_ARCHS["llama-3.1-8b"]
    ratio = lora_training_flops_per_token(full_8b, 2048, 8) / training_flops_per_token(full_8b, 2048)
    assert 0.66 < ratio < 0.72


@pytest.mark.skipif(not installed("peft"), reason="needs peft: pip install 'pytest-genai[lora]'")
@pytest.mark.parametrize("name", sorted(PAPER_ARCHS))
@pytest.mark.parametrize("scale", ["tiny", "full"])
@pytest.mark.parametrize("targets", [
    QKVO, ("q_proj", "v_proj"), ("k_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    # nothing of layer 0's attention inputs trains (these read too high before 2026-12-02)
    ("o_proj",), ("gate_proj", "up_proj", "down_proj"), ("down_proj",), ("o_proj", "down_proj"),
])
@pytest.mark.slow
def test_lora_flops_equal_the_flop_counter(name, scale, targets):
    """FlopCounterMode on a peft model (meta device) counts exactly what the LoRA formula says runs."""
    arch, spec = get_arch(name, scale), LoraSpec(rank=8, targets=targets, dropout=0.0)
    assert counted_training_flops(arch, 64, 2, lora=spec) == training_flops_per_step(arch, 64, 2, lora=spec)
