"""Benchmark configurations: validation, ids, JSON round trip, the matrix per scale."""
import dataclasses

import pytest

from pytest_genai.train.config import (ThroughputConfig, WikitextConfig, benchmark_matrix, from_json,
                                       reference_config)
from pytest_genai.train.lora import LoraSpec


def test_id_names_model_scale_random_weights_and_strategy():
    cfg = ThroughputConfig(model="gemma-2-27b", strategy="zero3", attention="unfused")
    assert cfg.id == "gemma-2-27b@tiny-random-zero3-attn_unfused-fp32-mb2-s128"
    assert cfg.sharded == "zero3" and dataclasses.replace(cfg, strategy="ddp").sharded is None
    assert ThroughputConfig(model="llama-3.3-70b", scale="full").id.startswith("llama-3.3-70b-random-")


@pytest.mark.parametrize("change, message", [
    ({"model": "gpt-4"}, "model"), ({"strategy": "pp"}, "strategy"), ({"attention": "flash2"}, "attention"),
    ({"micro_batch": 0}, "micro_batch"), ({"warmup": 1}, "warmup"), ({"warmup": 8}, "warmup"),
    ({"scale": "xl"}, "scale"), ({"precision": "int8"}, "precision"), ({"lr": 0.0}, "lr"),
])
def test_invalid_config_names_the_field(change, message):
    with pytest.raises(ValueError, match=f"ThroughputConfig.{message}"):
        ThroughputConfig(**{"model": "llama-3.1-8b", **change})


def test_json_round_trip():
    cfgs = [ThroughputConfig(model="llama-3.1-8b", strategy="fsdp"),
            ThroughputConfig(model="llama-3.1-8b", lora=LoraSpec(rank=4, targets=("q_proj", "down_proj"))),
            WikitextConfig(model_path="/m", text_path="/t", steps=3)]
    for cfg in cfgs:
        assert from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match="kind"):
        from_json({"kind": "inference"})


def test_tiny_matrix_has_what_the_claims_compare_baselines_first():
    ids = [c.id for c in benchmark_matrix("tiny")]
    assert len(ids) == len(set(ids)) == 8
    strategies = [(c.strategy, c.method) for c in benchmark_matrix("tiny") if c.model == "gemma-2-27b"]
    assert strategies == [(s, m) for m in ("full", "lora") for s in ("ddp", "fsdp", "zero3")]
    attention = [c.attention for c in benchmark_matrix("tiny") if c.model == "llama-3.1-8b"]
    assert attention == ["unfused", "fused"]


def paper_matrix(scale, methods=None):
    """The matrix without the runs set as a published row (tests/reference/test_reference_configs.py)."""
    return [c for c in benchmark_matrix(scale, methods) if reference_config(c) is None]


def test_full_matrix_covers_every_model_strategy_and_attention():
    cfgs = paper_matrix("full")
    assert {(c.model, c.strategy, c.attention) for c in cfgs} == {
        (m, s, a) for m in ("llama-3.1-8b", "gemma-2-27b", "llama-3.3-70b")
        for s in ("ddp", "zero2", "fsdp", "zero3") for a in ("fused", "unfused")}
    assert all(c.precision == "amp" for c in cfgs)
    with pytest.raises(ValueError, match="--genai-scale"):
        benchmark_matrix("medium")


def test_paper_scale_defaults_to_lora_and_keeps_full_fine_tuning_as_an_option():
    """Full fine-tuning of Gemma-2-27B under DDP cannot fit a Gaudi; optimum-habana's recipe is LoRA."""
    default = paper_matrix("full")
    assert {c.method for c in default} == {"lora"}
    assert all(c.lora == LoraSpec(rank=8, alpha=16, dropout=0.05, targets=("q_proj", "k_proj", "v_proj", "o_proj"))
               for c in default)
    both = paper_matrix("full", ("full", "lora"))
    assert {c.method for c in both} == {"full", "lora"} and len(both) == 2 * len(default)
    assert all(c.id.endswith("-lora_r8a16_qkvo_d0.05") for c in default)
    assert {c.method for c in benchmark_matrix("tiny", ("full",))} == {"full"}


def test_methods_setting_and_lora_field_errors():
    from pytest_genai.plugin.options import FINETUNE_METHODS, parse_finetune_methods
    from pytest_genai.train.config import METHODS

    assert FINETUNE_METHODS == METHODS  # --genai-finetune-methods offers exactly the methods the matrix knows
    assert parse_finetune_methods(" LoRA, full,lora") == ("lora", "full")
    with pytest.raises(ValueError, match="'qlora': use a comma-separated subset of full, lora"):
        parse_finetune_methods("qlora")
    with pytest.raises(ValueError, match="ThroughputConfig.lora"):
        ThroughputConfig(model="llama-3.1-8b", lora="r8")
