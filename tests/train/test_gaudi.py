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
    assert fsdp["fsdp"] == "full_shard auto_wrap"  # one unit per decoder layer, not the whole model as one
    assert fsdp["fsdp_config"]["transformer_layer_cls_to_wrap"] == ["GaudiGemma2DecoderLayer"]
    assert fsdp["fsdp_config"]["use_orig_params"] is True
    llama = training_arguments(ThroughputConfig(model="llama-3.3-70b", strategy="fsdp"), "/o")
    assert llama["fsdp_config"]["transformer_layer_cls_to_wrap"] == ["GaudiLlamaDecoderLayer"]


def test_fsdp_runs_eagerly_and_the_other_strategies_in_lazy_mode():
    """optimum-habana runs FSDP with PT_HPU_LAZY_MODE=0 and --use_lazy_mode False; Habana's fused AdamW exists only
    in lazy mode."""
    from pytest_genai.train.gaudi import gaudi_config_kwargs, hpu_mode_for

    fsdp = ThroughputConfig(model="llama-3.1-8b", strategy="fsdp")
    assert hpu_mode_for(fsdp) == "eager" and training_arguments(fsdp, "/o")["use_lazy_mode"] is False
    for strategy in ("ddp", "zero3"):
        cfg = ThroughputConfig(model="llama-3.1-8b", strategy=strategy)
        assert hpu_mode_for(cfg) == "lazy" and training_arguments(cfg, "/o")["use_lazy_mode"] is True
    assert gaudi_config_kwargs("eager")["use_fused_adam"] is False and gaudi_config_kwargs("lazy")["use_fused_adam"]


def test_the_fsdp_wrap_class_is_found_in_a_gaudi_adapted_model_and_the_upstream_name_is_not():
    """FSDP's transformer-based auto-wrap looks layers up by class name (accelerate's get_module_class_from_name);
    after adapt_transformers_to_gaudi the layers are GaudiLlamaDecoderLayer, so "LlamaDecoderLayer" finds none."""
    from accelerate.utils.dataclasses import get_module_class_from_name
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    from pytest_genai.train.gaudi import fsdp_layer_class

    class GaudiLlamaDecoderLayer(LlamaDecoderLayer):  # what optimum-habana swaps in, by name
        pass

    model = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=64))
    for layer in model.model.layers:
        layer.__class__ = GaudiLlamaDecoderLayer
    assert get_module_class_from_name(model, fsdp_layer_class("llama")) is GaudiLlamaDecoderLayer
    assert get_module_class_from_name(model, "LlamaDecoderLayer") is None
    with pytest.raises(ValueError, match="no Gaudi decoder-layer class known for model type 'mistral'"):
        fsdp_layer_class("mistral")


def test_a_rank_refuses_a_mode_other_than_the_one_asked_for():
    from pytest_genai.runtime.hpu_mode import mode_env, require_mode

    assert mode_env("lazy") == {"PT_HPU_LAZY_MODE": "1"} and mode_env("eager") == {"PT_HPU_LAZY_MODE": "0"}
    assert require_mode("lazy", running="lazy") == "lazy"
    with pytest.raises(RuntimeError, match=r"runs in eager mode but this run asked for lazy mode: PT_HPU_LAZY_MODE=1"):
        require_mode("lazy", running="eager")
    with pytest.raises(ValueError, match="hpu mode 'graph'"):
        mode_env("graph")


def test_the_ranks_of_an_hpu_run_get_the_mode_in_their_environment(monkeypatch, tmp_path):
    """Only the diffusion ranks had PT_HPU_LAZY_MODE; fine-tuning ranks ran in the bridge's default (eager on recent
    SynapseAI) while labelled lazy."""
    import types

    from pytest_genai.diffusion.ddp import rank_env
    from pytest_genai.runtime.launcher import LaunchSpec
    from pytest_genai.train import run

    seen = {}
    monkeypatch.setattr(run, "check_requirements", lambda cfg, kind: None)
    monkeypatch.setattr(run, "launch", lambda cmd, spec, work, env=None, warm=False:
                        seen.update(env or {}) or types.SimpleNamespace(result=None, wall_s=0.0))
    run.launch_config(ThroughputConfig(model="llama-3.1-8b", strategy="fsdp"), "hpu", LaunchSpec(), tmp_path,
                      env={"PT_HPU_LAZY_MODE": "1", "X": "y"})
    assert seen == {"PT_HPU_LAZY_MODE": "0", "X": "y"}
    run.launch_config(ThroughputConfig(model="llama-3.1-8b"), "hpu", LaunchSpec(), tmp_path)
    assert seen["PT_HPU_LAZY_MODE"] == "1"
    assert rank_env("hpu") == {"PT_HPU_LAZY_MODE": "1"}


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
