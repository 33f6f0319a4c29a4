"""Fake vs real quantization on a tiny Llama; what is touched and what is not; bad plans."""
import copy

import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import (FORMATS, PlanConfig, PrecisionPlan, SensitivityConfig, analyze_sensitivity,
                                compression_report, make_plan, quantize_model, uniform_plan)
from pytest_genai.quant.modules import QuantEmbedding, QuantLinear

from .conftest import tiny_llama

# real and fake compute from the same dequantized values; only accumulation order differs
# (per-channel formats scale the matmul output instead of the weight), so they agree to fp32 rounding
REAL_VS_FAKE = dict(rtol=1e-4, atol=1e-5)


def _logits(model, tokens):
    with torch.no_grad():
        return model(tokens).logits


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("group", [None, 32])
def test_real_and_fake_give_the_same_logits(llama, tokens, fmt, group):
    plan = uniform_plan(llama, fmt, group)
    fake = quantize_model(copy.deepcopy(llama), plan, "fake")
    real = quantize_model(copy.deepcopy(llama), plan, "real")
    assert all(isinstance(real.get_submodule(n), QuantLinear) for n in plan.formats)
    torch.testing.assert_close(_logits(real, tokens), _logits(fake, tokens), **REAL_VS_FAKE)


@pytest.mark.parametrize("fmt, rel", [("fp16", 1e-3), ("bf16", 1e-2), ("int8", 2e-2), ("fp8_e4m3", 0.1),
                                      ("int4", 0.3)])
def test_quantized_logits_stay_near_fp32(llama, tokens, fmt, rel):
    ref = _logits(llama, tokens)
    q = quantize_model(copy.deepcopy(llama), uniform_plan(llama, fmt), "real")
    err = (_logits(q, tokens) - ref).norm() / ref.norm()
    assert err < rel, f"{fmt}: relative logit error {err:.3g}"


def test_mixed_plan_real_matches_fake_and_stores_low_precision(llama, tokens):
    plan = make_plan(analyze_sensitivity(llama), PlanConfig(tiers=("bf16", "int8"), sensitive_fraction=0.25))
    real = quantize_model(copy.deepcopy(llama), plan, "real")
    fake = quantize_model(copy.deepcopy(llama), plan, "fake")
    torch.testing.assert_close(_logits(real, tokens), _logits(fake, tokens), **REAL_VS_FAKE)
    dtypes = {n: real.get_submodule(n).qweight.dtype for n in plan.formats}
    assert set(dtypes.values()) == {torch.bfloat16, torch.int8}
    assert all(fake.get_submodule(n).weight.dtype == torch.float32 for n in plan.formats)
    assert real.genai_quant.mode == "real" and fake.genai_quant.mode == "fake"


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_biases_norms_embeddings_untouched(llama_factory, mode):
    model = llama_factory(bias=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    q = quantize_model(model, uniform_plan(model, "int4"), mode)
    after = q.state_dict()
    for k, v in before.items():
        if k.endswith("bias") or "norm" in k or "embed" in k or k.startswith("lm_head"):
            assert torch.equal(after[k], v), k


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 100), frac=st.floats(0, 1), group=st.sampled_from([None, 32, 64]),
       tiers=st.sampled_from([("bf16", "int8"), ("fp16", "int4"), ("fp32", "bf16", "fp8_e4m3"),
                              ("bf16", "fp8_e5m2")]),
       granularity=st.sampled_from(["module", "block"]))
def test_measured_ratio_equals_predicted_for_dense_storage(seed, frac, group, tiers, granularity):
    model = tiny_llama(seed)
    res = analyze_sensitivity(model, SensitivityConfig(granularity=granularity))
    fr = frac if len(tiers) == 2 else (frac / 2, frac)
    plan = make_plan(res, PlanConfig(tiers=tiers, sensitive_fraction=fr, group_size=group))
    rep = compression_report(None, quantize_model(model, plan, "real"))
    s = plan.summary()
    assert rep["stored_bytes"] == s["predicted_stored_bytes"]
    assert rep["compression_ratio"] == pytest.approx(s["predicted_compression_ratio"], rel=1e-3)
    assert rep["compression_ratio_model"] == pytest.approx(s["predicted_compression_ratio_model"], rel=1e-3)
    assert rep["sparse_storage"] is False


def test_fake_mode_keeps_fp32_bytes(llama):
    plan = uniform_plan(llama, "int8")
    rep = compression_report(None, quantize_model(llama, plan, "fake"))
    assert rep["compression_ratio"] == 1.0 and rep["compression_ratio_model"] == 1.0


def test_embeddings_can_be_real_quantized(llama, tokens):
    res = analyze_sensitivity(llama, SensitivityConfig(include_embeddings=True, include_lm_head=True))
    plan = uniform_plan(res, "int8", 32)
    real = quantize_model(copy.deepcopy(llama), plan, "real")
    fake = quantize_model(copy.deepcopy(llama), plan, "fake")
    assert isinstance(real.model.embed_tokens, QuantEmbedding)
    torch.testing.assert_close(_logits(real, tokens), _logits(fake, tokens), **REAL_VS_FAKE)
    rep = compression_report(None, real)
    assert rep["compression_ratio"] == pytest.approx(plan.summary()["predicted_compression_ratio"], rel=1e-3)


def test_tied_weights_real_mode_refused_fake_mode_shared(llama_factory, tokens):
    model = llama_factory(tie=True)
    res = analyze_sensitivity(model, SensitivityConfig(include_embeddings=True))
    plan = uniform_plan(res, "int8")
    with pytest.raises(ValueError, match=r"'model.embed_tokens' shares its weight.*use mode='fake'"):
        quantize_model(copy.deepcopy(model), plan, "real")
    fake = quantize_model(model, plan, "fake")
    assert fake.lm_head.weight is fake.model.embed_tokens.weight


def test_bad_plans_and_arguments_named(llama):
    plan = uniform_plan(llama, "int8")
    missing = PrecisionPlan(formats={**plan.formats, "model.layers.9.mlp": "int8"},
                            shapes={**plan.shapes, "model.layers.9.mlp": (64, 64)})
    with pytest.raises(ValueError, match=r"plan names module 'model.layers.9.mlp', which LlamaForCausalLM does not"):
        quantize_model(llama, missing, "fake")
    wrong = PrecisionPlan(formats={"lm_head": "int8"}, shapes={"lm_head": (64, 64)})
    with pytest.raises(ValueError, match=r"'lm_head': weight shape \(128, 64\) differs"):
        quantize_model(llama, wrong, "fake")
    with pytest.raises(ValueError, match="mode='simulated'"):
        quantize_model(llama, plan, "simulated")
    with pytest.raises(ValueError, match="backend='tensorrt'"):
        quantize_model(llama, plan, "real", backend="tensorrt")
    with pytest.raises(ValueError, match="only does real quantization"):
        quantize_model(llama, plan, "fake", backend="torchao")
    quantize_model(llama, plan, "real")
    with pytest.raises(ValueError, match="QuantLinear, not nn.Linear.*already quantized"):
        quantize_model(llama, plan, "real")


def test_empty_model_rejected():
    with pytest.raises(ValueError, match="no eligible weight matrices"):
        analyze_sensitivity(torch.nn.Sequential())


def test_bf16_model_quantizes_and_predicts_exactly(tokens):
    model = tiny_llama(7).to(torch.bfloat16)
    plan = make_plan(analyze_sensitivity(model), PlanConfig(tiers=("fp16", "int4"), group_size=32))
    real = quantize_model(copy.deepcopy(model), plan, "real")
    fake = quantize_model(copy.deepcopy(model), plan, "fake")
    torch.testing.assert_close(_logits(real, tokens), _logits(fake, tokens), rtol=0, atol=0)
    rep = compression_report(None, real)
    s = plan.summary()
    assert rep["compression_ratio"] == pytest.approx(s["predicted_compression_ratio"], rel=1e-3)
    assert rep["compression_ratio_model"] == pytest.approx(s["predicted_compression_ratio_model"], rel=1e-3)


@pytest.mark.parametrize("fmt", ["int8", "fp8_e4m3"])
def test_fp16_real_layers_with_row_scales_do_not_overflow(fmt):
    """x @ codes is the output divided by the row's scale (x127 for int8): in fp16 it passed 65504 and the layer
    returned inf. fp16 layers dequantize first and say so in their compute path."""
    linear = torch.nn.Linear(2048, 4, bias=False)
    with torch.no_grad():
        linear.weight.fill_(0.01)
    x = torch.ones(2, 2048)
    want = linear(x)
    fp16 = QuantLinear.from_linear(copy.deepcopy(linear).half(), fmt)
    got = fp16(x.half())
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=0)
    assert fp16.compute_path == f"weight_only_{fmt}_dequant"
    fp32 = QuantLinear.from_linear(linear, fmt)
    assert fp32.compute_path == f"weight_only_{fmt}_scaled_output"
    torch.testing.assert_close(fp32(x), want, rtol=2e-2, atol=0)


def test_a_bf16_model_keeps_bf16_through_a_real_quantized_embedding():
    """QuantEmbedding always returned fp32: a bf16 model with a quantized embedding and an fp32 linear after it
    raised "mat1 and mat2 must have the same dtype"; with every linear quantized it silently ran in fp32."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(64, 32), torch.nn.Linear(32, 32), torch.nn.Linear(32, 8))
    model = model.to(torch.bfloat16)
    quantize_model(model, PrecisionPlan(formats={"0": "int8"}, shapes={"0": (64, 32)}), "real")
    assert isinstance(model[0], QuantEmbedding)
    assert model(torch.tensor([[1, 2, 3]])).dtype == torch.bfloat16


@pytest.mark.parametrize("cast", ["to_bf16", "half", "float"])
@pytest.mark.parametrize("fmt", ["int8", "fp8_e4m3", "bf16"])
def test_a_dtype_cast_keeps_the_stored_codes_and_scales(cast, fmt):
    """model.to(dtype) / .half() / .float() converted float8 codes and fp32 scales like any floating tensor: fp8
    codes widened to bf16 (twice the bytes), scales rounded to bf16 / fp16 (fp16: tiny ones to 0), bf16 storage
    widened by .float(); FP8 compute then refused its scales."""
    from pytest_genai.quant import fp8

    def stored(m):  # the codes and scales (the bias is a parameter and follows the cast)
        return sum(b.numel() * b.element_size() for b in m.buffers())

    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    layers = [QuantLinear.from_linear(linear, fmt), QuantEmbedding.from_embedding(torch.nn.Embedding(16, 64), fmt)]
    if fmt == "fp8_e4m3":
        layers.append(fp8.Fp8Linear.from_linear(linear))
    for layer in layers:
        before = {n: (b.dtype, b.clone()) for n, b in layer.named_buffers()}
        nbytes = stored(layer)
        moved = {"to_bf16": lambda m: m.to(torch.bfloat16), "half": lambda m: m.half(),
                 "float": lambda m: m.float()}[cast](layer)
        for name, (dtype, value) in before.items():
            after = dict(moved.named_buffers())[name]
            assert after.dtype == dtype and torch.equal(after.view(torch.uint8), value.view(torch.uint8)), name
        assert stored(moved) == nbytes
        act = {"to_bf16": torch.bfloat16, "half": torch.float16, "float": torch.float32}[cast]
        if isinstance(moved, QuantEmbedding):
            assert moved(torch.tensor([1, 2])).dtype == act
        elif not (isinstance(moved, fp8.Fp8Linear) and act == torch.float16):
            assert moved(torch.randn(2, 64, dtype=act)).dtype == act


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_fp8_weights_for_gaudi2_are_scaled_to_its_240_range(llama, mode) -> None:
    """Codes scaled to 448 (H100's e4m3fn) overflow Gaudi2's +-240."""
    import torch

    from pytest_genai.quant import quantize_model, uniform_plan
    from pytest_genai.quant.codecs import codes_as

    plan = uniform_plan(llama, "fp8_e4m3")
    name = "model.layers.0.mlp.up_proj"
    w = llama.get_submodule(name).weight.detach().clone()
    quantize_model(llama, plan, mode, device_generation="gaudi2")
    module = llama.get_submodule(name)
    if mode == "real":
        assert float(codes_as(module.quantized_weight(), torch.float32).abs().max()) == 240.0
    else:  # fake: the values are those of the 240 grid, not the 448 one
        from pytest_genai.quant.codecs import fake_quantize

        assert torch.equal(module.weight, fake_quantize(w, "fp8_e4m3", qmax=240.0))
        assert not torch.equal(module.weight, fake_quantize(w, "fp8_e4m3"))
