"""optimum-habana's baselines file (the shipped copy, a real file at a recorded commit) read as reference rows."""
from __future__ import annotations

import json

import pytest

from pytest_genai.reference import sources
from pytest_genai.reference.optimum_habana import ReferenceFormatError, read_baselines, read_settings, split_test
from pytest_genai.reference.row import Provenance

LORA = "CausalLanguageModelingLORAExampleTester::test_run_lora_clm_llama-7b_single_card"
WHERE = Provenance("optimum-habana", "huggingface/optimum-habana", "x.json", "0" * 40, 0, "2025-01-01")


@pytest.fixture(scope="module")
def rows():
    return sources.load("optimum-habana")


def test_all_three_generations_load_with_their_published_numbers_and_lines(rows) -> None:
    lora = {r.generation: r for r in rows if r.row_id == LORA}
    assert sorted(lora) == ["gaudi", "gaudi2", "gaudi3"]
    assert [lora[g].metrics["samples_per_s"] for g in ("gaudi", "gaudi2", "gaudi3")] == [2.295, 18.428, 29.824]
    assert [lora[g].provenance.line for g in ("gaudi", "gaudi2", "gaudi3")] == [18, 23, 28]
    text = sources._packaged("optimum_habana/test_examples.json").splitlines()
    assert text[23 - 1].strip() == '"train_samples_per_second": 18.428'
    assert lora["gaudi2"].provenance.commit == "d1863561db431182ce89ef70bd26b6d6d4372c61"
    assert {r.generation for r in rows} == {"gaudi", "gaudi2", "gaudi3"}


def test_settings_come_from_the_config_and_differ_between_generations(rows) -> None:
    lora = {r.generation: r for r in rows if r.row_id == LORA}
    assert lora["gaudi"].settings["batch_per_card"] == 2
    assert lora["gaudi2"].settings["batch_per_card"] == 16
    assert lora["gaudi2"].settings["precision"] == "bf16" and lora["gaudi2"].settings["max_steps"] == 100
    assert lora["gaudi2"].unstated == ("seq_len",)  # the config never states it: the row says so
    assert lora["gaudi"].cards == 1 and lora["gaudi"].experiment == "finetune"


def test_a_row_without_a_shipped_config_states_no_settings(rows) -> None:
    row = next(r for r in rows if "gemma-2b-it_single_card" in r.row_id)
    assert row.settings == {} and set(row.unstated) == {"batch_per_card", "seq_len", "precision", "max_steps"}


def test_a_distribution_with_several_datasets_is_left_unstated() -> None:
    config = {"gaudi2": {"a": {"distribution": {"multi_card": {"train_batch_size": 8}}},
                         "b": {"distribution": {"multi_card": {"train_batch_size": 4}}}}}
    assert read_settings(config, "gaudi2", "multi_card") == ({}, "")
    assert read_settings({"gaudi2": {"a": config["gaudi2"]["a"]}}, "gaudi2", "multi_card")[0]["batch_per_card"] == 8


def test_test_names_split_into_example_model_and_distribution() -> None:
    assert split_test(f"tests/test_examples.py::{LORA}") == ("run_lora_clm", "llama-7b", "single_card")
    assert split_test("X::test_sft_Qwen2-72B_deepspeed") == ("sft", "Qwen2-72B", "deepspeed")
    with pytest.raises(ReferenceFormatError, match="single_card"):
        split_test("X::test_run_clm_gpt2_two_nodes")


def test_an_unknown_generation_is_an_error_naming_it() -> None:
    text = json.dumps({"t::test_run_clm_gpt2_single_card": {"gaudi9": {"train_samples_per_second": 1.0}}})
    with pytest.raises(ReferenceFormatError, match="gaudi9"):
        read_baselines(text, WHERE)
