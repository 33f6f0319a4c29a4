"""LoRA as optimum-habana's run_lora_clm.py builds it: the spec, its peft arguments, dtypes, a frozen base."""
import pytest

from pytest_genai.train.lora import LoraSpec, adapter_dtype_for, apply_lora, base_dtype_for
from pytest_genai.train.requirements import installed


def test_defaults_are_the_optimum_habana_recipe_and_peft_gets_its_arguments():
    spec = LoraSpec()
    assert spec.peft_kwargs() == {"r": 8, "lora_alpha": 16, "lora_dropout": 0.05,
                                  "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "bias": "none",
                                  "task_type": "CAUSAL_LM"}
    assert spec.id == "lora_r8a16_qkvo_d0.05"
    assert LoraSpec(rank=4, targets=("q_proj", "gate_proj", "down_proj"), dropout=0).id == "lora_r4a16_qgado_d0"
    assert LoraSpec(targets=["q_proj"]).targets == ("q_proj",)  # JSON lists come back as tuples


@pytest.mark.parametrize("change, field", [
    ({"rank": 0}, "rank"), ({"alpha": 1.5}, "alpha"), ({"targets": ()}, "targets"), ({"targets": ("qkv",)}, "targets"),
    ({"targets": ("q_proj", "q_proj")}, "targets"), ({"dropout": 1.0}, "dropout"), ({"dropout": -0.1}, "dropout"),
])
def test_bad_spec_names_the_field(change, field):
    with pytest.raises(ValueError, match=f"LoraSpec.{field}"):
        LoraSpec(**change)


def test_dtypes_per_device():
    """bf16 base on accelerators (the recipe), fp32 on the CPU; adapters bf16 only on Gaudi (the recipe casts the
    PEFT model), fp32 elsewhere (peft's default)."""
    assert [base_dtype_for(k) for k in ("cpu", "cuda", "hpu")] == ["float32", "bfloat16", "bfloat16"]
    assert [adapter_dtype_for(k) for k in ("cpu", "cuda", "hpu")] == ["float32", "float32", "bfloat16"]


@pytest.mark.skipif(not installed("peft"), reason="needs peft: pip install 'pytest-genai[lora]'")
def test_apply_lora_freezes_the_base_and_trains_adapters_in_their_dtype():
    import torch

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.train.planner import lora_params

    arch = get_arch("llama-3.1-8b", "tiny")
    model = apply_lora(build_model(arch, "eager"), LoraSpec(rank=4), base_dtype="bfloat16", adapter_dtype="float32")
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert sum(p.numel() for p in trainable.values()) == lora_params(arch, 4)
    assert {p.dtype for p in trainable.values()} == {torch.float32}
    assert {p.dtype for p in model.parameters() if not p.requires_grad} == {torch.bfloat16}
    with pytest.raises(ValueError, match="base_dtype='float16'"):
        apply_lora(build_model(arch, "eager"), LoraSpec(), base_dtype="float16")


@pytest.mark.skipif(not (installed("peft") and installed("neural_compressor")),
                    reason="needs peft and neural-compressor installed")
def test_apply_lora_does_not_import_inc_to_rule_out_inc_layers():
    """peft's dispatch imports INC (1.3 s, a py-cpuinfo subprocess) to ask whether a layer is INC FP8's PatchedLinear;
    no layer can be one before that module is imported, so apply_lora answers without it. Run in a fresh
    interpreter: the test session may have imported INC already."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pytest_genai.train.archs import get_arch\n"
        "from pytest_genai.train.build import build_model\n"
        "from pytest_genai.train.lora import LoraSpec, apply_lora\n"
        "from peft.tuners.lora import inc\n"
        "before = inc.is_inc_available\n"
        "model = apply_lora(build_model(get_arch('llama-3.1-8b', 'tiny'), 'eager'), LoraSpec(rank=4))\n"
        "assert any('lora_' in n for n, _ in model.named_parameters())\n"
        "assert inc.is_inc_available is before, 'peft left patched'\n"
        "print('loaded' if 'neural_compressor' in sys.modules else 'absent')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "absent"


ZERO3_LORA_PROBE = """
import deepspeed
from pytest_genai.train.archs import get_arch
from pytest_genai.train.build import build_model
from pytest_genai.train.lora import LoraSpec, apply_lora
arch = get_arch("llama-3.1-8b", "tiny")
build_model(arch, "eager")  # transformers' lazy imports done outside zero.Init, as in a worker that built before
config = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}}
with deepspeed.zero.Init(config_dict_or_path=config, remote_device="cpu"):
    model = apply_lora(build_model(arch, "eager"), LoraSpec(rank=4, alpha=8),
                       base_dtype="bfloat16", adapter_dtype="float32")
params = list(model.parameters())
with deepspeed.zero.GatheredParameters(params):
    seen = sorted({(str(p.dtype), p.requires_grad) for p in params})
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_a_zero3_lora_build_gathers_its_frozen_base_in_the_base_dtype(tmp_path):
    """Built under deepspeed.zero.Init (the deferred ZeRO-3 path on accelerators), `model.to(bfloat16)` cast only the
    empty `.data` of each partitioned parameter; every gather rebuilt the weights from the fp32 shards, so the frozen
    base ran in fp32 while the row recorded bf16. One gloo rank on the CPU, in its own process."""
    pytest.importorskip("deepspeed")
    pytest.importorskip("peft")
    from .gloo_rank import run_one_rank

    seen = run_one_rank(ZERO3_LORA_PROBE, tmp_path)
    assert seen == [["torch.bfloat16", False], ["torch.float32", True]], seen
