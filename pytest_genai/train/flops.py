"""Training FLOPs: the analytic count used for achieved TFLOP/s and MFU, and a cross-check with torch's counter.

Analytic definition (Kaplan et al. 2020, sec. 2.1; PaLM, Chowdhery et al. 2022, appendix B):
a training step costs ``6·N`` FLOPs per token for the matmul parameters ``N`` (2 forward, 4 backward) plus
``12·L·S·d_attn`` per token for the attention scores and the weighted sum over ``S`` positions
(``d_attn = heads × head_dim``), counted over the full ``S×S`` square, as the PaLM formula and
``torch.utils.flop_counter`` both do (a causal kernel does about half of that work). Elementwise work (norms,
activations, RoPE, softmax) and the embedding gather are not counted. Gemma-2's 4096-token sliding window
changes nothing for sequences up to 4096.
"""

from __future__ import annotations

from pytest_genai.train.archs import ArchSpec


def training_flops_per_token(arch: ArchSpec, seq_len: int) -> int:
    """Analytic training FLOPs per token: ``6·N_matmul + 12·L·S·d_attn`` (see module docstring)."""
    if seq_len <= 0:
        raise ValueError(f"seq_len={seq_len} must be positive")
    return 6 * arch.matmul_params() + 12 * arch.num_layers * seq_len * arch.q_dim


def training_flops_per_step(arch: ArchSpec, seq_len: int, global_batch: int) -> int:
    """Analytic training FLOPs of one optimizer step over ``global_batch`` sequences of ``seq_len`` tokens."""
    if global_batch <= 0:
        raise ValueError(f"global_batch={global_batch} must be positive")
    return training_flops_per_token(arch, seq_len) * seq_len * global_batch


def counted_training_flops(arch: ArchSpec, seq_len: int, batch: int, attention: str = "eager") -> int:
    """FLOPs of one forward + backward as ``torch.utils.flop_counter.FlopCounterMode`` counts them.

    Runs on the meta device, so it costs no memory or compute even for the 70B model.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_genai.train.build import build_model

    model = build_model(arch, attention, device="meta")
    ids = torch.zeros((batch, seq_len), dtype=torch.long, device="meta")
    counter = FlopCounterMode(display=False)
    with counter:
        # A ready 4-D additive mask: transformers' own mask builder reads values, which meta tensors lack.
        mask = torch.zeros((batch, 1, seq_len, seq_len), device="meta")
        out = model(input_ids=ids, attention_mask=mask)
        # Backward from the logits (the loss itself is elementwise work the counter does not count).
        out.logits.backward(torch.ones_like(out.logits))
    return int(counter.get_total_flops())
