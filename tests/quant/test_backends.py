"""torchao and Intel Neural Compressor backends on the plan's modules (skip cleanly when absent)."""
import copy

import pytest
import torch

from pytest_genai.quant import PlanConfig, analyze_sensitivity, compression_report, make_plan, quantize_model, uniform_plan
from pytest_genai.quant.backends import BackendUnavailable, inc_available, torchao_available


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


def test_inc_fp8_records_inc_fp8_only_on_layers_inc_converted(llama, monkeypatch):
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
                for name in allow["names"]:
                    old = model.get_submodule(name)
                    new = Patched(old.in_features, old.out_features, bias=old.bias is not None)
                    backends.set_module(model, name, new)
            return model

        allow = {}

        def fp8_config(fp8_config, allowlist, dump_stats_path):
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
