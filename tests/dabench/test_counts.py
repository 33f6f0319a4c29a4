"""Analytic counts: pinned by hand-computed examples and cross-checked with FlopCounterMode on the real module."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench import counts
from pytest_genai.dabench.config import DecoderConfig


def test_forward_matmul_flops_by_hand():
    # M = 2 * 4 = 8 tokens, h = 4, f = 16, S = 4, B = 2.
    cfg = DecoderConfig(layers=1, hidden=4, heads=2, seq_len=4, batch=2)
    m, h, f, s, b = 8, 4, 16, 4, 2
    linears = 2 * m * h * (3 * h) + 2 * m * h * h + 2 * m * h * f + 2 * m * f * h
    attention = 2 * (2 * b * s * s * h)
    assert counts.stack_counts(cfg).flops == linears + attention == 3072 + 512


def test_linear_bytes_by_hand():
    op = counts._linear("fc", m=8, k=4, n=16, e=2)
    assert op.bytes == 2 * (8 * 4 + 4 * 16 + 16 + 8 * 16)
    assert op.flops == 2 * 8 * 4 * 16


def test_train_matmul_flops_are_three_times_forward():
    fwd = DecoderConfig(layers=3, hidden=32, heads=4, seq_len=16, batch=2)
    train = dataclasses.replace(fwd, mode="train")
    assert counts.stack_counts(train).flops == 3 * counts.stack_counts(fwd).flops


def test_sdpa_moves_no_score_matrix():
    math = DecoderConfig(layers=1, hidden=64, heads=4, seq_len=256)
    fused = dataclasses.replace(math, attention="sdpa")
    assert counts.stack_counts(fused).flops == counts.stack_counts(math).flops
    saved = counts.stack_counts(math).bytes - counts.stack_counts(fused).bytes
    assert saved > 4 * 4 * 256 * 256 * 4  # at least the scores written, masked and soft-maxed


def test_fused_attention_backward_reads_five_tensors_and_writes_three():
    """q, k, v, out and dout in; dq, dk, dv out -- the count had dout folded into out (seven tensors)."""
    cfg = DecoderConfig(layers=1, hidden=64, heads=1, seq_len=128, batch=1, attention="sdpa", mode="train")
    (grad,) = [op for op in counts.layer_backward_ops(cfg) if op.name == "sdpa.grad"]
    assert grad.bytes == 4 * 8 * (128 * 64)


def test_classes_partition_the_ops():
    cfg = DecoderConfig(layers=2, hidden=32, heads=2, seq_len=8, mode="train")
    work = counts.stack_counts(cfg)
    by_class = work.by_class()
    assert set(by_class) == {"matmul", "attention", "elementwise", "optimizer"}
    assert sum(c.flops for c in by_class.values()) == work.flops
    assert sum(c.bytes for c in by_class.values()) == work.bytes
    assert by_class["elementwise"].flops == 0 and by_class["elementwise"].nominal_flops > 0


def test_optimizer_reads_four_and_writes_three_tensors():
    cfg = DecoderConfig(layers=2, hidden=16, heads=2, mode="train")
    (adamw,) = counts.optimizer_ops(cfg)
    assert adamw.bytes == 7 * cfg.params * 4


def _flop_counter_total(cfg: DecoderConfig) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_genai.dabench import model

    stack = model.build_stack(cfg, torch.device("cpu"))
    x = model.make_input(cfg, torch.device("cpu"))
    with FlopCounterMode(display=False) as counter:
        y = stack(x)
        if cfg.mode == "train":
            y.backward(torch.ones_like(y))
    return counter.get_total_flops()


@settings(max_examples=25, deadline=None)
@given(
    layers=st.integers(1, 3),
    head_dim=st.sampled_from([4, 8]),
    heads=st.integers(1, 3),
    ffn_ratio=st.integers(1, 4),
    seq_len=st.integers(1, 12),
    batch=st.integers(1, 3),
    mode=st.sampled_from(["forward", "train"]),
    causal=st.booleans(),
)
def test_analytic_flops_equal_flop_counter(layers, head_dim, heads, ffn_ratio, seq_len, batch, mode, causal):
    cfg = DecoderConfig(layers=layers, hidden=heads * head_dim, heads=heads, ffn_ratio=ffn_ratio, seq_len=seq_len,
                        batch=batch, mode=mode, causal=causal)
    assert counts.stack_counts(cfg).matmul_flops == _flop_counter_total(cfg)


@settings(max_examples=25, deadline=None)
@given(hidden=st.sampled_from([8, 16, 64]), seq_len=st.integers(1, 64), batch=st.integers(1, 4),
       dtype=st.sampled_from(["fp32", "bf16"]))
def test_counts_scale_with_dtype_and_stay_positive(hidden, seq_len, batch, dtype):
    cfg = DecoderConfig(layers=2, hidden=hidden, heads=hidden // 8, seq_len=seq_len, batch=batch, dtype=dtype)
    work = counts.stack_counts(cfg)
    assert work.flops > 0 and work.bytes > 0
    fp32 = counts.stack_counts(dataclasses.replace(cfg, dtype="fp32"))
    mask_bytes = 2 * seq_len * seq_len  # boolean mask: 1 byte per element whatever the dtype, read by 2 layers
    assert (work.bytes - mask_bytes) * (4 // cfg.bytes_per_element) == fp32.bytes - mask_bytes


def test_op_work_validates():
    with pytest.raises(ValueError, match="op_class"):
        counts.OpWork("x", "conv", 1, 1)
