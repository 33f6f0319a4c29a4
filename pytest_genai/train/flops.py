"""Training FLOPs: the analytic count used for achieved TFLOP/s and MFU, and a cross-check with torch's counter.

Analytic definition (Kaplan et al. 2020, sec. 2.1; PaLM, Chowdhery et al. 2022, appendix B):
a training step costs ``6·N`` FLOPs per token for the matmul parameters ``N`` (2 forward, 4 backward) plus
``12·L·S·d_attn`` per token for the attention scores and the weighted sum over ``S`` positions
(``d_attn = heads × head_dim``), counted over the full ``S×S`` square, as the PaLM formula and
``torch.utils.flop_counter`` both do (a causal kernel does about half of that work). Elementwise work (norms,
activations, RoPE, softmax) and the embedding gather are not counted, nor is the rotary frequency table, which some
transformers versions build with a small matmul (5.17: ``B·S·head_dim`` FLOPs a forward) and others elementwise. Gemma-2's 4096-token sliding window
changes nothing for sequences up to 4096.


LoRA (:func:`lora_training_flops_per_token`) counts what runs when only adapters train: the base matmuls'
forward (``2·N``) and their activation gradients (``2·N``) but no weight gradients, the adapters' ``6·N_lora``,
the attention core as above; and nothing below the first trainable module (layer 0's q, k, v and their
``lora_A`` produce no input gradient: the embedding and first norm are frozen; nor do its later linears until one
before them trains, e.g. o_proj and the MLP when only the MLP is targeted; layer 0's attention backward computes
dQ, dK, dV only for targeted projections). Equal to ``FlopCounterMode`` on a peft model (tested, for target sets
with and without q, k, v).
"""

from __future__ import annotations

from typing import Any

from pytest_genai.train.archs import ArchSpec
from pytest_genai.train.planner import LORA_TARGETS, linear_shapes, lora_params


def training_flops_per_token(arch: ArchSpec, seq_len: int) -> int:
    """Analytic training FLOPs per token: ``6·N_matmul + 12·L·S·d_attn`` (see module docstring)."""
    if seq_len <= 0:
        raise ValueError(f"seq_len={seq_len} must be positive")
    return 6 * arch.matmul_params() + 12 * arch.num_layers * seq_len * arch.q_dim


#: A decoder layer's linears in the order their outputs feed each other (the attention core sits between the first
#: two stages): a stage's input gradient is needed only when some earlier stage of layer 0 trains.
_LAYER_STAGES = (("q_proj", "k_proj", "v_proj"), ("o_proj",), ("gate_proj", "up_proj"), ("down_proj",))


def lora_training_flops_per_token(arch: ArchSpec, seq_len: int, rank: int,
                                  targets: tuple[str, ...] = LORA_TARGETS) -> int:
    """Analytic FLOPs per token of a LoRA step (see module docstring): ``4·N + 6·N_lora + 12·L·S·d_attn``, less
    what layer 0 skips because nothing before it trains: the input gradients (base and ``lora_A``) of each of its
    stages that no earlier stage's target feeds, and the attention gradients no targeted q, k or v needs."""
    if seq_len <= 0:
        raise ValueError(f"seq_len={seq_len} must be positive")
    unknown = set(targets) - {t for stage in _LAYER_STAGES for t in stage}
    if unknown:
        raise ValueError(f"LoRA targets {sorted(unknown)} are not decoder linears; use some of "
                         f"{', '.join(t for stage in _LAYER_STAGES for t in stage)}")
    shapes = linear_shapes(arch)
    skipped_first_layer = 0
    trains_before = False
    for stage in _LAYER_STAGES:
        if not trains_before:  # nothing before this stage trains: no gradient for its input, base or adapter
            skipped_first_layer += sum(2 * shapes[t][0] * shapes[t][1] for t in stage)
            skipped_first_layer += sum(2 * rank * shapes[t][0] for t in stage if t in targets)
        trains_before = trains_before or any(t in targets for t in stage)
    # layer 0's attention backward: dQ, dK, dV only for the targeted projections, dP only if q or k is
    q, k, v = ("q_proj" in targets), ("k_proj" in targets), ("v_proj" in targets)
    skipped_first_attention = 2 * seq_len * arch.q_dim * (4 - (q or k) - q - k - v)
    return (4 * arch.matmul_params() + 6 * lora_params(arch, rank, targets) + 12 * arch.num_layers * seq_len
            * arch.q_dim - skipped_first_layer - skipped_first_attention)


def training_flops_per_step(arch: ArchSpec, seq_len: int, global_batch: int, lora: Any = None) -> int:
    """Analytic training FLOPs of one optimizer step over ``global_batch`` sequences of ``seq_len`` tokens;
    ``lora`` (a :class:`~pytest_genai.train.lora.LoraSpec`, or None for full fine-tuning) counts LoRA's."""
    if global_batch <= 0:
        raise ValueError(f"global_batch={global_batch} must be positive")
    if lora is None:
        per_token = training_flops_per_token(arch, seq_len)
    else:
        per_token = lora_training_flops_per_token(arch, seq_len, lora.rank, tuple(lora.targets))
    return per_token * seq_len * global_batch


def counted_training_flops(arch: ArchSpec, seq_len: int, batch: int, attention: str = "eager", lora: Any = None) -> int:
    """FLOPs of one forward + backward as ``torch.utils.flop_counter.FlopCounterMode`` counts them (``lora``: a
    :class:`~pytest_genai.train.lora.LoraSpec` whose adapters are applied first, with peft).

    Runs on the meta device, so it costs no memory or compute even for the 70B model.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_genai.train.build import build_model

    model = build_model(arch, attention, device="meta")
    if lora is not None:
        from pytest_genai.train.lora import apply_lora

        model = apply_lora(model, lora)
    # The rotary embedding's frequency table is position bookkeeping, not model work; transformers 5.17 builds it
    # with a batched matmul that the counter sees, 5.24 elementwise: its count is left out, whatever the version.
    rotary = [name for name, module in model.named_modules() if type(module).__name__.endswith("RotaryEmbedding")]
    ids = torch.zeros((batch, seq_len), dtype=torch.long, device="meta")
    counter = FlopCounterMode(display=False)
    with counter:
        # A ready 4-D additive mask: transformers' own mask builder reads values, which meta tensors lack.
        mask = torch.zeros((batch, 1, seq_len, seq_len), device="meta")
        out = model(input_ids=ids, attention_mask=mask)
        # Backward from the logits (the loss itself is elementwise work the counter does not count).
        out.logits.backward(torch.ones_like(out.logits))
    per_module = counter.get_flop_counts()  # keyed "<root class>.<module path>"
    table = sum(sum(per_module[key].values()) for key in per_module for name in rotary if key.endswith("." + name))
    return int(counter.get_total_flops() - table)
