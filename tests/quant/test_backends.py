"""torchao and Intel Neural Compressor backends on the plan's modules (skip cleanly when absent)."""
import copy

import pytest
import torch

from pytest_genai.quant import PlanConfig, analyze_sensitivity, compression_report, make_plan, quantize_model, uniform_plan
from pytest_genai.quant.backends import BackendUnavailable, inc_available, torchao_available

from .conftest import tiny_llama


def _need(reason):
    if reason:
        pytest.skip(f"{reason} (pip install 'pytest-genai[quant]' to run this)")


@pytest.mark.parametrize("group", [None, 32])
@pytest.mark.parametrize("backend, check", [("torchao", torchao_available), ("inc", inc_available)])
def test_backend_int8_close_to_native(llama, tokens, backend, check, group):
    _need(check())
    plan = make_plan(analyze_sensitivity(llama), PlanConfig(tiers=("bf16", "int8"), group_size=group))
    native = quantize_model(copy.deepcopy(llama), plan, "real")
    other = quantize_model(copy.deepcopy(llama), plan, "real", backend=backend)
    used = other.genai_quant.backend_formats
    assert {used[n] for n, f in plan.formats.items() if f == "int8"} == {backend}
    assert {used[n] for n, f in plan.formats.items() if f == "bf16"} == {"native"}
    with torch.no_grad():
        a, b = native(tokens).logits, other(tokens).logits
    assert (a - b).norm() / a.norm() < 1e-2  # both symmetric per-channel RTN; INC keeps fp16 scales
    rep = compression_report(None, other)
    assert 2.0 < rep["compression_ratio"] < 4.0  # measured from the backend's own tensors


def test_inc_int4_group(llama, tokens):
    _need(inc_available())
    plan = uniform_plan(llama, "int4", 32)
    out = quantize_model(copy.deepcopy(llama), plan, "real", backend="inc")
    assert set(out.genai_quant.backend_formats.values()) == {"inc"}
    with torch.no_grad():
        ref = llama(tokens).logits
        assert (out(tokens).logits - ref).norm() / ref.norm() < 0.3


def test_inc_fp8_off_gaudi_is_a_clear_skip_reason(llama):
    _need(inc_available())
    with pytest.raises(BackendUnavailable, match="Gaudi"):
        quantize_model(llama, uniform_plan(llama, "fp8_e4m3"), "real", backend="inc")


def test_inc_fp8_records_inc_fp8_only_on_layers_inc_converted(llama, monkeypatch, inc_selects):
    """Every allow-listed name was stamped ``compute_path = "inc_fp8"`` whether or not INC's convert changed it, so
    the Gaudi mechanics check passed with nothing quantized. INC faked here: one convert that does nothing, one that
    converts the allow-listed linears."""
    import types

    import torch.nn as nn

    from pytest_genai.quant import backends

    class Patched(nn.Linear):  # stands for INC's patched FP8 linear
        pass

    def fake_inc(converts: bool):
        def convert(model):
            if converts:
                for name in inc_selects(model, allow):
                    old = model.get_submodule(name)
                    new = Patched(old.in_features, old.out_features, bias=old.bias is not None)
                    backends.set_module(model, name, new)
            return model

        allow = {}

        def fp8_config(fp8_config, allowlist, dump_stats_path, **others):
            allow.update(allowlist)
            return object()

        return types.SimpleNamespace(FP8Config=fp8_config, prepare=lambda m, cfg: m,
                                     finalize_calibration=lambda m: None, convert=convert)

    names = ["model.layers.0.mlp.up_proj", "model.layers.1.mlp.down_proj"]
    for converts in (False, True):
        model = copy.deepcopy(llama)
        inc = fake_inc(converts)
        monkeypatch.setattr(backends, "_require", lambda module, hint: inc)
        backends.inc_fp8(model, names, calibrate=lambda m: None)
        paths = [getattr(model.get_submodule(n), "compute_path", None) for n in names]
        assert paths == (["inc_fp8"] * 2 if converts else [None, None])


def test_inc_fp8_allowlist_selects_exactly_the_plans_layers_under_incs_own_rules(inc_selects):
    """INC ORs the allowlist's types and names and matches names with re.search: ``types: ["Linear"]`` converted every
    linear and the LM head, and an unanchored name also matches every name it is part of."""
    from pytest_genai.quant import backends

    model = tiny_llama(layers=12)
    names = ["model.layers.1.mlp.up_proj", "model.layers.0.self_attn.q_proj"]
    assert sorted(inc_selects(model, backends.inc_fp8_allowlist(names))) == sorted(names)
    # what the old allowlist did, under the same rules: every Linear
    every = inc_selects(model, {"names": names, "types": ["Linear"]})
    assert "lm_head" in every and len(every) == 12 * 7 + 1
    # unanchored names are substring patterns: in a Sequential of 11 linears, "1" also selects "10"
    stack = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(11)])
    assert inc_selects(stack, {"names": ["1"], "types": []}) == ["1", "10"]
    assert inc_selects(stack, backends.inc_fp8_allowlist(["1"])) == ["1"]


def test_inc_fp8_refuses_a_convert_that_touched_layers_outside_the_plan(llama, monkeypatch):
    import types

    import torch.nn as nn

    from pytest_genai.quant import backends

    class Patched(nn.Linear):
        pass

    def convert(model):  # an INC that converts every linear, as the old allowlist asked it to
        for name, mod in list(model.named_modules()):
            if type(mod) is nn.Linear:
                backends.set_module(model, name, Patched(mod.in_features, mod.out_features, bias=False))
        return model

    inc = types.SimpleNamespace(FP8Config=lambda **kw: object(), prepare=lambda m, cfg: m,
                                finalize_calibration=lambda m: None, convert=convert)
    monkeypatch.setattr(backends, "_require", lambda module, hint: inc)
    with pytest.raises(RuntimeError, match=r"INC FP8 converted \d+ linear\(s\) outside the plan's fp8 layers"):
        backends.inc_fp8(llama, ["model.layers.0.mlp.up_proj"], calibrate=lambda m: None)


def test_a_backend_that_replaces_a_native_layer_is_refused_not_requantized(llama, monkeypatch):
    """The native pass re-quantized modules a backend had converted (from the original fp32 weights, without the
    backend's scales)."""
    import torch.nn as nn

    from pytest_genai.quant import backends
    from pytest_genai.quant.plan import make_plan
    from pytest_genai.quant.sensitivity import SensitivityConfig, analyze_sensitivity

    plan = make_plan(analyze_sensitivity(llama, SensitivityConfig()), PlanConfig(tiers=("bf16", "int8")))
    int8 = sorted(n for n, f in plan.formats.items() if f == "int8")
    bf16 = sorted(n for n, f in plan.formats.items() if f == "bf16")

    def greedy(model, plan, backend, modules, **kw):  # converts its int8 layers and, wrongly, one bf16 layer
        for name in int8 + bf16[:1]:
            old = model.get_submodule(name)
            backends.set_module(model, name, nn.Linear(old.in_features, old.out_features, bias=False))
        return {n: "torchao" for n in int8}

    monkeypatch.setattr(backends, "apply_backend", greedy)
    with pytest.raises(RuntimeError, match=rf"replaced module '{bf16[0]}', which the plan leaves to the native"):
        quantize_model(llama, plan, "real", backend="torchao")


@pytest.mark.parametrize("dtype, hp_dtype", [("float32", "fp32"), ("bfloat16", "bf16")])
def test_inc_fp8_returns_the_models_own_precision(llama, monkeypatch, dtype, hp_dtype):
    """INC's FP8Config defaults ``hp_dtype`` to bf16: inside an fp32 model its fp8 linears returned bf16 and SDPA met
    mixed dtypes. The config now names the model's dtype, in a spelling INC's own parser accepts."""
    import types

    import torch

    from pytest_genai.quant import backends

    seen = {}

    def fp8_config(**kwargs):
        seen.update(kwargs)
        return object()

    inc = types.SimpleNamespace(FP8Config=fp8_config, prepare=lambda m, cfg: m,
                                finalize_calibration=lambda m: None, convert=lambda m: m)
    monkeypatch.setattr(backends, "_require", lambda module, hint: inc)
    model = llama.to(getattr(torch, dtype))
    backends.inc_fp8(model, ["model.layers.0.mlp.up_proj"], calibrate=lambda m: None)
    assert seen.get("hp_dtype") == hp_dtype
    quant_config = pytest.importorskip("neural_compressor.torch.algorithms.fp8_quant._quant_common.quant_config")
    parsed = quant_config._get_enum_from_string(quant_config.HpDtype, seen["hp_dtype"], "hp_dtype")
    assert parsed.value == getattr(torch, dtype)


def test_inc_fp8_returns_what_the_activations_flow_in(llama):
    """A plan's bf16 tier leaves some layers in bf16: the activations still flow in the embedding's dtype."""
    import torch

    from pytest_genai.quant.backends import inc_hp_dtype

    llama.model.layers[0].to(torch.bfloat16)
    assert inc_hp_dtype(llama) == "fp32"
    with pytest.raises(ValueError, match="INC FP8 returns one of"):
        inc_hp_dtype(llama.to(torch.float64))
