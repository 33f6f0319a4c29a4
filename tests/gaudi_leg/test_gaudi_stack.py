"""The real optimum-habana 1.21 / transformers 4.55 / neural-compressor / DeepSpeed code on the stand-in bridge: what
runs, and exactly where each path stops without a card (docs/devices.md, "What ran where"). Each case is a fresh
process (drive_gaudi.py)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("drive_gaudi.py")
#: seconds one driver process may take (imports of optimum-habana dominate: ~20 s on 2 cores)
BOUND_S = 240


def drive(*args: str, lazy: bool = True, hpu: bool = False) -> dict:
    env = {**os.environ, "PT_HPU_LAZY_MODE": "1" if lazy else "0", "GENAI_STANDIN_HPU": "1" if hpu else "0"}
    done = subprocess.run([sys.executable, str(DRIVER), *args], env=env, capture_output=True, text=True,
                          timeout=BOUND_S)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("LEG-RESULT ")]
    assert lines, f"no LEG-RESULT line (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(lines[-1][len("LEG-RESULT "):])


def test_the_leg_runs_optimum_habana_1_21_with_what_it_pins():
    from importlib.metadata import distribution, version

    assert version("optimum-habana").startswith("1.21.")
    assert version("transformers").startswith("4.55.")
    assert int(version("huggingface-hub").split(".")[0]) == 0  # transformers 4.55 needs huggingface_hub < 1.0
    plugin = distribution("habana-torch-plugin")  # optimum.habana reads its version (pip list) at import
    assert "STAND-IN" in plugin.metadata["Summary"]
    import habana_frameworks
    import optimum.habana  # noqa: F401  (its import-time SynapseAI version check)

    assert "STAND-IN" in habana_frameworks.__doc__


@pytest.mark.parametrize("model, route", [("llama-3.1-8b", "trainer"), ("gemma-2-27b", "batch")])
def test_gaudi_trainer_trains_and_flash_attention_reaches_the_fused_kernel_only_when_on(model, route):
    """train/gaudi.py's run_gaudi through GaudiTrainer: Llama gets the flag from the trainer, Gemma-2 from every
    batch; either way Habana's FusedSDPA is called exactly when attention='fused'."""
    for attention in ("fused", "unfused"):
        out = drive("train", model, "ddp", attention)
        assert out["ok"], out.get("trace")
        result, rank = out["result"], out["result"]["ranks"][0]
        assert result["device"] == "hpu" and len(result["losses"]) == 3
        assert all(math.isfinite(x) for x in result["losses"])
        assert rank["hpu_mode"] == "lazy" and rank["flash_attention_route"] == route
        assert rank["attention_impl"] == ("habana-fused-sdpa" if attention == "fused" else "habana-eager")
        if attention == "fused":
            assert out["fused_sdpa_calls"] > 0, "Flash Attention on never reached Habana's fused kernel"
        else:
            assert out["fused_sdpa_calls"] == 0, "Flash Attention off still ran Habana's fused kernel"


def test_gaudi_lora_trains_adapters_on_a_bf16_base_through_peft():
    out = drive("train", "llama-3.1-8b", "ddp", "fused", "lora")
    assert out["ok"], out.get("trace")
    rank = out["result"]["ranks"][0]
    assert rank["base_dtype"] == "bfloat16" and rank["method"] == "lora"
    assert 0 < rank["trainable_params"] < rank["params"]


def test_fsdp_wraps_the_gaudi_decoder_layer_classes():
    """After adapt_transformers_to_gaudi the layers are optimum-habana's classes: the wrap names exactly those."""
    out = drive("layers")
    assert out["ok"], out.get("trace")
    for model, seen in out["layers"].items():
        assert seen["classes"] == [seen["wrap"]], (model, seen)


def test_fsdp_on_the_stand_in_stops_at_accelerates_device_check():
    """Eager mode, the wrap check passes, GaudiTrainingArguments build; GaudiTrainer's accelerator then finds no
    device for FSDP (accelerate 1.10 has no CPU FSDP): where the CPU stops."""
    out = drive("train", "gemma-2-27b", "fsdp", "fused", lazy=False)
    assert not out["ok"]
    assert "There are currently no available devices found" in out["error"]
    assert "create_accelerator_and_postprocess" in out["trace"]


def test_zero3_training_arguments_need_an_hpu_device():
    """optimum-habana builds the DeepSpeed config only for an HPU device: with the trainer on the CPU, ZeRO-3 stops
    at the arguments (the training itself never runs here)."""
    out = drive("args", "llama-3.1-8b", "zero3")
    assert not out["ok"] and "This version of DeepSpeed must be run on HPUs" in out["error"]


def test_zero3_builds_the_model_partitioned_under_zero_init_after_the_arguments():
    """With the arguments first, transformers builds the model under deepspeed.zero.Init: every parameter is
    partitioned as it is created (no rank holds the whole fp32 model). Built before them, none was."""
    out = drive("zero3", hpu=True)
    assert out["ok"], out.get("trace")
    assert out["device"].startswith("hpu")
    assert out["partitioned"] == out["params"] > 0 and out["data_numel"] == 0 < out["whole_numel"]


def test_inc_fp8_on_the_stand_in_stops_at_incs_cpu_config_check():
    """quant/backends.inc_fp8 builds its FP8Config and calls INC's prepare; INC, finding no HPU, parses it for the
    CPU, where only its QDQ mode exists."""
    out = drive("inc")
    assert not out["ok"] and "only QDQ mode is supported on CPU device" in out["error"]
    assert "inc_fp8" in out["trace"] and "prepare" in out["trace"]


@pytest.mark.parametrize("lazy, mode", [(True, "lazy"), (False, "eager")])
def test_a_diffusion_row_names_the_mode_the_bridge_started_in(lazy, mode):
    out = drive("mode", lazy=lazy)
    assert out["ok"], out.get("trace")
    assert out["config"]["hpu_mode"] == mode
