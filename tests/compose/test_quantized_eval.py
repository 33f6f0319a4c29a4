import pytest

from pytest_genai.compose.quantized_eval import QuantCase, quantize, resolve_backend, resolve_tiers

from ..evals.conftest import tiny_llama  # the evals tests' tiny Llama (byte vocabulary)


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "int3", "task": "wikitext"}, r"QuantCase.mode='int3'"),
    ({"mode": "fp32", "task": "boolq", "tiers": ("bf16", "int8")}, "fp32 baseline has no tiers"),
    ({"mode": "fake", "task": "boolq", "backend": "torchao"}, "mode='real' only"),
])
def test_case_validation_names_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        QuantCase(**kwargs)


def test_case_ids():
    assert QuantCase("fp32", "wikitext").id == "fp32-wikitext"
    assert QuantCase("real", "boolq", ("fp16", "int8"), "native").id == "real-fp16-int8-native-boolq"


def test_device_defaults():
    assert resolve_tiers(QuantCase("fake", "wikitext"), "cpu") == ("bf16", "int8")
    assert resolve_tiers(QuantCase("fake", "wikitext"), "hpu") == ("bf16", "fp8_e4m3")
    assert resolve_backend(QuantCase("real", "wikitext"), "cpu") == "native"
    assert resolve_backend(QuantCase("real", "wikitext"), "hpu") == "inc"
    assert resolve_backend(QuantCase("real", "wikitext", backend="torchao"), "cpu") == "torchao"
    assert resolve_backend(QuantCase("fake", "wikitext"), "cpu") == "native"


def test_fake_keeps_fp32_storage_and_real_measures_compression():
    import torch

    fake = quantize(tiny_llama(), QuantCase("fake", "wikitext"), "cpu")
    assert fake.report is None and fake.tiers == ("bf16", "int8")
    assert all(p.dtype == torch.float32 for p in fake.model.parameters())
    real = quantize(tiny_llama(), QuantCase("real", "wikitext", backend="native"), "cpu")
    ratio = real.report["compression_ratio"]
    assert ratio == pytest.approx(real.plan_summary["predicted_compression_ratio"], rel=1e-3)
    assert 2.0 < ratio < 4.0  # a bf16/int8 mix of fp32 weights
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():  # real and fake compute the same function up to rounding
        assert torch.allclose(real.model(ids).logits, fake.model(ids).logits, atol=1e-2)


def test_the_fp32_case_is_not_quantized():
    with pytest.raises(ValueError, match="baseline"):
        quantize(tiny_llama(), QuantCase("fp32", "wikitext"), "cpu")
