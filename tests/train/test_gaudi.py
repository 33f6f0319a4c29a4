"""The Gaudi path's argument mapping (pure) and its refusal without the Gaudi stack."""
import importlib.util

import pytest

from pytest_genai.train.config import ThroughputConfig
from pytest_genai.train.gaudi import run_gaudi, training_arguments


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
