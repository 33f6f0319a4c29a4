"""Fixtures for the evaluation tests: a byte-level tokenizer and a tiny Llama built from a config (no download),
and the shared evaluation data when ``--genai-data-dir`` / ``GENAI_DATA_DIR`` points at it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

BOS, EOS = "<s>", "</s>"
VOCAB = 260  # 256 byte tokens + specials; the tiny model's vocab_size


def byte_tokenizer(add_bos: bool = False):
    """A real HF fast tokenizer with one token per UTF-8 byte (byte-level BPE, no merges) and BOS/EOS tokens.

    ``add_bos=True`` makes it prepend BOS like a Llama tokenizer; False behaves like SmolLM2's (adds nothing).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    vocab[BOS], vocab[EOS] = len(vocab), len(vocab) + 1
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS)


def tiny_llama(seed: int = 0, hidden: int = 32, layers: int = 2):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=1024,
                      bos_token_id=256, eos_token_id=257)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # sharper next-token distributions than the tiny default init, so scores differ clearly
        model.lm_head.weight.mul_(20.0)
    return model


@pytest.fixture(scope="session")
def tokenizer():
    return byte_tokenizer()


@pytest.fixture(scope="session")
def model():
    import torch

    torch.set_num_threads(1)
    return tiny_llama()


@pytest.fixture(scope="session")
def shared_data_dir(request) -> Path:
    """The evaluation data folder, or a skip naming the flag."""
    value = request.config.getoption("genai_data_dir", default=None) or os.environ.get("GENAI_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("evaluation data not found; pass --genai-data-dir DIR (layout of shared/data) or set GENAI_DATA_DIR")
    return Path(value)
