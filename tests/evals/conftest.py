"""Fixtures for the evaluation tests: a byte-level tokenizer and a tiny Llama built from a config (no download),
and the shared evaluation data when ``--genai-data-dir`` / ``GENAI_DATA_DIR`` points at it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# the byte-vocabulary tokenizer and tiny Llama are shared with the compose and quant tests: tests/conftest.py
from ..conftest import BOS, EOS, VOCAB, byte_tokenizer  # noqa: F401  (re-exported for the evals tests)
from ..conftest import byte_vocab_llama as tiny_llama  # noqa: F401


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
