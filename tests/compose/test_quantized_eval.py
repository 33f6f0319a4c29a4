import pytest

from pytest_genai.compose.quantized_eval import QuantCase, quantize, resolve_backend, resolve_tiers

from ..conftest import byte_vocab_llama as tiny_llama  # the byte-vocabulary tiny Llama (tests/conftest.py)


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


def test_fp8_compute_and_pruned_cases_have_their_own_ids():
    from pytest_genai.compose.quantized_eval import QuantCase

    fp8 = ("bf16", "fp8_e4m3")
    assert QuantCase("real", "wikitext", fp8).id == "real-bf16-fp8_e4m3-wikitext"  # weight-only fp8 storage
    assert QuantCase("real", "wikitext", fp8, "fp8_w8a8").id == "real-bf16-fp8_e4m3-fp8_w8a8-wikitext"
    assert QuantCase("real", "boolq", sparsity="bitmask").id == "real-pruned-bitmask-boolq"
    with pytest.raises(ValueError, match="sparsity"):
        QuantCase("fake", "boolq", sparsity="bitmask")
    with pytest.raises(ValueError, match="sparsity"):
        QuantCase("real", "boolq", sparsity="2:4")


def test_fp8_compute_case_records_every_layer_in_fp8():
    from pytest_genai.compose.quantized_eval import compute_path_counts, mechanics_problems

    case = QuantCase("real", "wikitext", ("bf16", "fp8_e4m3"), "fp8_w8a8")
    q = quantize(tiny_llama(), case, "cpu")
    counts = compute_path_counts(q.compute_paths)
    assert counts["fp8_w8a8_scaled_mm"] == q.plan_summary["modules_per_format"]["fp8_e4m3"]
    assert mechanics_problems(case, q, "cpu") == []
    # a layer that fell back is a problem the benchmark row fails on
    name = next(n for n, p in q.compute_paths.items() if p == "fp8_w8a8_scaled_mm")
    q.compute_paths[name] = "fp8_weight_only_dequant"
    assert "fp8_w8a8" in mechanics_problems(case, q, "cpu")[0]


def test_pruned_case_prunes_with_the_global_threshold_and_stores_a_bitmask():
    from pytest_genai.compose.quantized_eval import mechanics_problems

    case = QuantCase("real", "wikitext", sparsity="bitmask")
    q = quantize(tiny_llama(), case, "cpu")
    assert q.pruning["pruned_fraction"] >= 0.3
    assert q.report["sparse_storage"] == "bitmask"
    assert q.report["compression_ratio"] > q.plan_summary["predicted_compression_ratio"]
    assert mechanics_problems(case, q, "cpu") == []
    assert mechanics_problems(case, q, "cpu", sparsity_target=0.9)  # under-pruning is caught
    dense = quantize(tiny_llama(), QuantCase("real", "wikitext"), "cpu")
    assert dense.pruning is None and dense.report["sparse_storage"] is False
    assert mechanics_problems(case, dense, "cpu")  # a dense model in a pruned row is caught


def test_the_pruning_check_counts_the_stored_zeros_not_the_pruning_steps_count():
    """The check read the pruning step's own count of |w| <= tau (at least the target by construction): stored codes
    that lost their zeros on the way to storage still passed."""
    import dataclasses

    from pytest_genai.compose.quantized_eval import mechanics_problems

    case = QuantCase("real", "wikitext", sparsity="bitmask")
    q = quantize(tiny_llama(), case, "cpu")
    assert 1 - q.report["nonzero_fraction"] >= 0.3 and mechanics_problems(case, q, "cpu") == []
    lost = dataclasses.replace(q, report={**q.report, "nonzero_fraction": 0.9})  # storage kept 90% nonzero
    (problem,) = mechanics_problems(case, lost, "cpu")
    assert "0.1000 of the stored eligible codes are zero, below the 0.3 target" in problem
