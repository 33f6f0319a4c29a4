"""Tiny config-built models for the quantizer tests (no download, built in milliseconds)."""
import pytest


def tiny_llama(seed: int = 0, *, tie: bool = False, hidden: int = 64, layers: int = 2, bias: bool = False):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                      max_position_embeddings=64, tie_word_embeddings=tie, attention_bias=bias, mlp_bias=bias)
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture
def llama():
    return tiny_llama()


@pytest.fixture
def llama_factory():
    return tiny_llama


@pytest.fixture(scope="session")
def tokens():
    import torch

    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 128, (2, 16), generator=g)


def inc_fp8_selection(model, allowlist, blocklist=None):
    """The module names INC FP8's ``prepare_model`` would convert for ``allowlist``: INC's own ``should_quantize``
    over ``model.named_modules()``, with INC's default module table (its code imports on the CPU; only the Gaudi
    conversion itself needs a Gaudi). A fake INC built on this selects what the real one would."""
    import types

    inc = pytest.importorskip("neural_compressor.torch.algorithms.fp8_quant._core.utils")
    cfg = types.SimpleNamespace(cfg={"mod_dict": {}, "allowlist": allowlist,
                                     "blocklist": blocklist or {"names": [], "types": ()},
                                     "dynamic_quantization": False})
    inc.update_mod_dict(cfg)
    return [name for name, mod in model.named_modules() if inc.should_quantize(cfg, type(mod).__name__, name)]


@pytest.fixture
def inc_selects():
    return inc_fp8_selection
