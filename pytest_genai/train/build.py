"""Build an :class:`~pytest_genai.train.archs.ArchSpec` as a transformers model with random weights.

Works with transformers 4.55 (the ``hpu`` extra's pin) and 5.x: the RoPE settings moved from ``rope_theta`` /
``rope_scaling`` to ``rope_parameters`` between them, so the config is built for whichever the installed
version accepts.
"""

from __future__ import annotations

import inspect
from typing import Any

from pytest_genai.train.archs import ArchSpec

# RoPE settings from the same config.json files as the shapes (archs.py names them).
_LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
_GEMMA2_ROPE = {"rope_type": "default", "rope_theta": 10000.0}

ATTENTION_IMPLS = ("sdpa", "eager")


def supports_sdpa(arch: ArchSpec) -> bool:
    """Whether transformers offers an SDPA attention path for this family.

    Gemma-2 has none (its attention-logit soft-capping is not expressible in SDPA); it runs eager attention
    on CPU and CUDA, and Habana's own fused SDPA on Gaudi.
    """
    return arch.family != "gemma2"


def _rope_kwargs(config_cls: type, rope: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(config_cls.__init__).parameters
    if "rope_parameters" in params:
        return {"rope_parameters": dict(rope)}
    scaling = {k: v for k, v in rope.items() if k != "rope_theta"}
    kwargs: dict[str, Any] = {"rope_theta": rope["rope_theta"]}
    if scaling.get("rope_type", "default") != "default":
        kwargs["rope_scaling"] = scaling
    return kwargs


def make_config(arch: ArchSpec, attention: str = "sdpa"):
    """The transformers config for ``arch`` with ``attn_implementation=attention``."""
    if attention not in ATTENTION_IMPLS:
        raise ValueError(f"attention={attention!r} is unknown; use one of {ATTENTION_IMPLS}")
    if attention == "sdpa" and not supports_sdpa(arch):
        raise ValueError(
            f"{arch.id}: transformers has no SDPA attention for the {arch.family} family; use attention='eager'"
        )
    common = dict(
        vocab_size=arch.vocab,
        hidden_size=arch.hidden,
        intermediate_size=arch.ffn,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        max_position_embeddings=arch.max_positions,
        tie_word_embeddings=arch.tie_embeddings,
        use_cache=False,
    )
    if arch.family == "llama":
        from transformers import LlamaConfig

        # Llama-3's long-context RoPE scaling applies beyond 8192 positions; scaled variants are shorter.
        rope = _LLAMA3_ROPE if arch.max_positions > _LLAMA3_ROPE["original_max_position_embeddings"] else {
            "rope_type": "default",
            "rope_theta": _LLAMA3_ROPE["rope_theta"],
        }
        config = LlamaConfig(**common, **_rope_kwargs(LlamaConfig, rope))
    else:
        from transformers import Gemma2Config

        config = Gemma2Config(
            **common,
            **_rope_kwargs(Gemma2Config, _GEMMA2_ROPE),
            # Gemma-2 scales queries by 1/sqrt(hidden/heads) (144 for the 27B), not 1/sqrt(head_dim).
            query_pre_attn_scalar=arch.hidden // arch.num_heads,
        )
    config._attn_implementation = attention
    return config


def build_model(arch: ArchSpec, attention: str = "sdpa", *, seed: int = 0, device: str | None = None):
    """A causal-LM model of ``arch`` with seeded random weights, in fp32, in train mode.

    ``device='meta'`` builds it without allocating weights (for FLOP counting of the full-size models).
    """
    import torch
    from transformers import AutoModelForCausalLM

    config = make_config(arch, attention)
    torch.manual_seed(seed)
    if device == "meta":
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, attn_implementation=attention)
    else:
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attention)
        if device is not None:
            model = model.to(device)
    model.train()
    return model


def materialize(model: Any, device: Any, seed: int = 0) -> Any:
    """Give a model built on the meta device (and possibly already sharded, FSDP2's meta DTensors) real storage on
    ``device`` and initialize it there, so that no process ever holds the whole model in host memory.

    Parameters: transformers' own initialization (``init_weights``, the same distributions as a normal build; the
    values differ from an eager build's, which does not matter to throughput: the weights are random either way).
    Buffers that are computed, not learned (the rotary embedding's ``inv_freq``), are copied from a freshly
    constructed module of the same class, whatever the transformers version computes them with. LoRA's ``lora_B``
    starts at zero, as peft starts it.
    """
    import torch

    model.to_empty(device=device)
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    torch.manual_seed(seed)
    with torch.no_grad():
        base.init_weights()
        for module in base.modules():
            if hasattr(module, "inv_freq") and hasattr(base, "config"):
                fresh = type(module)(config=base.config)
                for name, buf in fresh.named_buffers(recurse=False):
                    getattr(module, name).copy_(buf.to(getattr(module, name).dtype))
        for name, param in model.named_parameters():
            if ".lora_B." in name:
                param.zero_()
    return model
