"""NVIDIA NeMo's performance summary (the shipped copy, a real page at a recorded commit) read as reference rows."""
from __future__ import annotations

import pytest

from pytest_genai.reference import sources
from pytest_genai.reference.nemo import read_summary
from pytest_genai.reference.optimum_habana import ReferenceFormatError
from pytest_genai.reference.row import Provenance


@pytest.fixture(scope="module")
def rows():
    return sources.load("nemo")


def test_both_tables_load_with_their_lines_and_context(rows) -> None:
    assert len(rows) == 18  # 12 pre-training rows, 6 fine-tuning rows
    llama3 = next(r for r in rows if r.model == "llama3-8b")
    assert llama3.metrics == {"tokens_per_s_per_device": 12273.0, "model_tflops_per_device": 711.0}
    assert llama3.identity["seq_len"] == 8192 and llama3.identity["context_parallel"] == 2
    assert llama3.identity["precision"] == "fp8" and llama3.generation == "h100-sxm" and llama3.cards == 8
    assert llama3.provenance.line == 24 and llama3.provenance.table == "Pretraining"
    line = sources._packaged("nemo/performance_summary.md").splitlines()[24 - 1]
    assert "LLAMA3-8B" in line and "12273" in line


def test_a_column_the_table_lacks_is_unstated(rows) -> None:
    lora = next(r for r in rows if r.model == "llama2-7b" and r.task == "LoRA")
    assert lora.metrics["tokens_per_s_per_device"] == 24824.0
    assert "context_parallel" in lora.unstated and "context_parallel" not in lora.identity
    assert lora.settings["container"] == "NeMo24.07"


def test_an_unknown_system_is_an_error_naming_it() -> None:
    text = "### Pretraining\n- System: DGX-B200\n\n| Model | #-GPUs |\n| - | - |\n| X | 8 |\n"
    where = Provenance("nemo", "NVIDIA/NeMo", "p.md", "0" * 40, 0, "2024-01-01")
    with pytest.raises(ReferenceFormatError, match="DGX-B200"):
        read_summary(text, where)
