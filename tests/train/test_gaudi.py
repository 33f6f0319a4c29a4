"""The Gaudi path's argument mapping (pure) and its refusal without the Gaudi stack."""
import importlib.util

import pytest

from pytest_genai.train.config import ThroughputConfig
from pytest_genai.train.gaudi import (
    FLASH_CAVEATS, TRAINER_FORWARDS_FLASH, flash_attention_route, flash_batch_flags, run_gaudi, training_arguments,
)


def test_strategy_mapping():
    ddp = training_arguments(ThroughputConfig(model="llama-3.1-8b"), "/o")
    assert ddp["use_habana"] and ddp["use_lazy_mode"] and ddp["ddp_backend"] == "hccl"
    assert "deepspeed" not in ddp and "fsdp" not in ddp and ddp["throughput_warmup_steps"] == 3
    z3 = training_arguments(ThroughputConfig(model="gemma-2-27b", strategy="zero3"), "/o")
    assert z3["deepspeed"]["zero_optimization"]["stage"] == 3
    fsdp = training_arguments(ThroughputConfig(model="gemma-2-27b", strategy="fsdp"), "/o")
    assert fsdp["fsdp"] == "full_shard"
    assert fsdp["fsdp_config"]["transformer_layer_cls_to_wrap"] == ["Gemma2DecoderLayer"]


@pytest.mark.skipif(importlib.util.find_spec("habana_frameworks") is not None, reason="Gaudi stack present")
def test_without_gaudi_stack_the_error_says_how_to_get_it():
    with pytest.raises(RuntimeError, match="habana_frameworks"):
        run_gaudi(ThroughputConfig(model="llama-3.1-8b"), {"rank": 0, "local_rank": 0, "world_size": 1,
                                                          "local_world_size": 1})


def test_flash_attention_reaches_every_paper_model_for_real():
    """optimum-habana's trainer forwards use_flash_attention only for some model types (trainer.py,
    _get_input_update_settings), not gemma2: Gemma-2's batches carry the flags, Llama's come from the trainer."""
    assert TRAINER_FORWARDS_FLASH == ("llama", "qwen2", "starcoder2", "gemma", "baichuan", "chatglm", "deepseek_v2")
    assert flash_attention_route("llama").how == "trainer"
    assert flash_batch_flags("llama", True) == {} == flash_batch_flags("llama", False)
    gemma2 = flash_attention_route("gemma2")
    assert gemma2.how == "batch" and "does not forward" in gemma2.reason
    assert flash_batch_flags("gemma2", True) == {"use_flash_attention": True, "flash_attention_causal_mask": True}
    assert flash_batch_flags("gemma2", False) == {"use_flash_attention": False, "flash_attention_causal_mask": False}
    assert "soft-capping" in FLASH_CAVEATS["gemma2"]
    from pytest_genai.train.archs import PAPER_ARCHS

    assert all(flash_attention_route(a.family).how != "not_applicable" for a in PAPER_ARCHS.values())


def test_flash_attention_without_a_verified_switch_is_not_applicable():
    route = flash_attention_route("mistral")
    assert route.how == "not_applicable" and "only for llama" in route.reason and "'mistral'" in route.reason
    assert flash_batch_flags("mistral", False) == {}  # unfused runs as it is
    with pytest.raises(ValueError, match="attention='fused' on Gaudi for mistral"):
        flash_batch_flags("mistral", True)
