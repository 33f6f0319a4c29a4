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
