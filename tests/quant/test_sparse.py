"""Bitmask sparse storage (prune-then-quantize): codec round trip, mask correctness, byte accounting with and without
the mask, and the model path (prune_ with the global threshold, quantize_model(sparse="bitmask"), report, save/load)."""
import copy
import dataclasses

import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import (PlanConfig, SensitivityConfig, analyze_sensitivity, compression_report, load_quantized,
                                make_plan, prune_, quantize_model, save_quantized, uniform_plan)
from pytest_genai.quant.codecs import dequantize, error_bound, quantize
from pytest_genai.quant.formats import get_format
from pytest_genai.quant.modules import QuantLinear, SparseQuantLinear
from pytest_genai.quant import sparse
from pytest_genai.quant.sparse import (densify, mask_bytes, pack_bitmask, semi_structured_support, sparse_stored_bytes,
                                       sparsify, unpack_bitmask)

from pytest_genai.runtime import native

from .conftest import tiny_llama

SPARSE_FORMATS = ("int8", "fp8_e4m3", "fp8_e5m2", "bf16", "fp16")


def _bits(t):
    return t.view(torch.uint8) if t.element_size() == 1 else t.view(torch.int16)


@st.composite
def pruned_weights(draw):
    rows, cols = draw(st.integers(1, 24)), draw(st.integers(1, 70))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    w = torch.randn(rows, cols, generator=g) * 10.0 ** draw(st.floats(-4, 2))
    tau = torch.quantile(w.abs().flatten(), draw(st.floats(0.0, 0.95)))
    w[w.abs() <= tau] = 0.0
    return w


@settings(max_examples=60, deadline=None)
@given(w=pruned_weights(), fmt=st.sampled_from(SPARSE_FORMATS))
def test_sparse_round_trip_is_bit_exact_and_keeps_the_format_bound(w, fmt):
    qw = quantize(w, fmt)
    back = densify(sparsify(qw))
    assert torch.equal(_bits(back.data), _bits(qw.data))
    assert back.scale is qw.scale and back.shape == qw.shape
    assert torch.all((dequantize(back) - w).abs() <= error_bound(qw, w))
    assert torch.all(dequantize(back)[w == 0] == 0)  # pruned weights stay exactly zero


@settings(max_examples=60, deadline=None)
@given(w=pruned_weights(), fmt=st.sampled_from(SPARSE_FORMATS))
def test_mask_marks_exactly_the_nonzero_codes(w, fmt):
    qw = quantize(w, fmt)
    sw = sparsify(qw)
    mask = unpack_bitmask(sw.mask, qw.shape[1])
    assert torch.equal(mask, _bits(qw.data) != 0)
    assert sw.nonzeros == int(mask.sum())
    assert torch.equal(_bits(sw.values), _bits(qw.data)[mask])  # row-major order
    assert not torch.any(mask[w == 0])  # every pruned weight is a cleared bit


@settings(max_examples=60, deadline=None)
@given(w=pruned_weights(), fmt=st.sampled_from(SPARSE_FORMATS))
def test_stored_bytes_match_the_accounting_with_and_without_the_mask(w, fmt):
    qw = quantize(w, fmt)
    sw = sparsify(qw)
    rows, cols = qw.shape
    assert sw.mask_nbytes() == mask_bytes(qw.shape) == rows * -(-cols // 8)
    assert sw.nbytes() == sparse_stored_bytes(fmt, qw.shape, sw.nonzeros)
    assert sw.nbytes_without_mask() == sparse_stored_bytes(fmt, qw.shape, sw.nonzeros, count_mask=False)
    assert sw.nbytes() - sw.nbytes_without_mask() == sw.mask_nbytes()
    # fully dense codes: the mask is pure overhead on top of the dense format's bytes
    assert sparse_stored_bytes(fmt, qw.shape, rows * cols, count_mask=False) == get_format(fmt).stored_bytes(qw.shape)


@given(mask=st.lists(st.lists(st.booleans(), min_size=13, max_size=13), min_size=1, max_size=5))
def test_bitmask_pack_unpack(mask):
    m = torch.tensor(mask)
    packed = pack_bitmask(m)
    assert packed.shape == (len(mask), 2) and packed.dtype == torch.uint8
    assert torch.equal(unpack_bitmask(packed, 13), m)


def test_bitmask_bit_order_example():
    m = torch.tensor([[True, False, False, True, False, False, False, False, True]])
    assert pack_bitmask(m).tolist() == [[0b00001001, 0b00000001]]


def test_sparse_accounting_example():
    # 100 x 64 int8 with 30% zeros: 4480 values + 100 scales x 4 B + 800 mask bytes
    assert sparse_stored_bytes("int8", (100, 64), 4480) == 4480 + 400 + 800
    assert sparse_stored_bytes("int8", (100, 64), 4480, count_mask=False) == 4880
    assert sparse_stored_bytes("bf16", (10, 9), 3) == 6 + 20
    with pytest.raises(ValueError, match="int4"):
        sparse_stored_bytes("int4", (10, 8), 3)
    with pytest.raises(ValueError, match="outside"):
        sparse_stored_bytes("int8", (2, 2), 5)


@st.composite
def code_bits(draw):
    """Dense code bit patterns of 1 or 2 bytes, some zero: rows x cols with cols past one 64-column chunk."""
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 200))
    dtype = draw(st.sampled_from((torch.uint8, torch.int16)))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    hi = 256 if dtype == torch.uint8 else 2**15
    bits = torch.randint(-hi if dtype == torch.int16 else 0, hi, (rows, cols), generator=g).to(dtype)
    bits[torch.rand(rows, cols, generator=g) < draw(st.floats(0.0, 1.0))] = 0
    return bits


def _sparse_of_bits(bits):
    fmt, dtype = ("int8", torch.int8) if bits.dtype == torch.uint8 else ("bf16", torch.bfloat16)
    set_mask = bits != 0
    return sparse.SparseWeight(fmt, bits[set_mask].view(dtype), pack_bitmask(set_mask), None, tuple(bits.shape), None)


def _kernel_or_skip():
    if sparse._densify_library() is None:
        pytest.skip(f"no compiled densify kernel here ({native.why_not(sparse._DENSIFY_KERNEL)})")


@settings(max_examples=150, deadline=None)
@given(bits=code_bits())
def test_the_densify_kernel_places_the_codes_like_torch(bits):
    _kernel_or_skip()
    sw = _sparse_of_bits(bits)
    values = sparse._int_view(sw.values)
    got = sparse._densify_native(sw, values)
    assert got is not None  # the CPU path runs the kernel
    assert torch.equal(got.reshape(-1), sparse._densify_torch(sw, values))
    assert torch.equal(got.view(bits.dtype), bits)


@pytest.fixture(scope="module")
def portable_densify(tmp_path_factory):
    """The kernel built without AVX-512 (its bit-walking loop, what CPUs without VBMI2 run), loaded with ctypes."""
    import ctypes
    import platform
    import subprocess

    cc = native.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("densify") / "portable.so"
    arch = ["-march=x86-64"] if platform.machine() in ("x86_64", "AMD64") else []
    subprocess.run([cc, "-O2", *arch, "-shared", "-fPIC", "-o", str(out), str(sparse._DENSIFY_KERNEL)], check=True)
    fn = ctypes.CDLL(str(out)).genai_densify_bitmask
    fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                               ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return fn


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16])
@pytest.mark.parametrize("seed", range(4))
def test_the_portable_densify_loop_places_the_codes_like_torch(portable_densify, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    rows, cols = 3, (1, 63, 64, 130)[seed]
    bits = torch.randint(1, 127, (rows, cols), generator=g).to(dtype)
    bits[torch.rand(rows, cols, generator=g) < 0.4] = 0
    sw = _sparse_of_bits(bits)
    values = sparse._int_view(sw.values)
    out = torch.empty_like(bits)
    placed = portable_densify(sw.mask.data_ptr(), rows, cols, values.data_ptr(), values.numel(),
                              values.element_size(), out.data_ptr())
    assert placed == values.numel()
    assert torch.equal(out, bits)
    assert portable_densify(sw.mask.data_ptr(), rows, cols, values.data_ptr(), values.numel() - 1,
                            values.element_size(), out.data_ptr()) == -1  # never reads past the codes


@pytest.mark.parametrize("path", ["kernel", "torch"])
def test_a_mask_that_does_not_match_its_codes_is_refused_with_the_counts(path, monkeypatch):
    if path == "kernel":
        _kernel_or_skip()
    else:
        monkeypatch.setattr(sparse, "_densify_library", lambda: None)
    bits = torch.tensor([[3, 0, 5, 0, 0, 7, 0, 0, 9]], dtype=torch.uint8)
    sw = _sparse_of_bits(bits)
    extra = dataclasses.replace(sw, mask=pack_bitmask(torch.ones(1, 9, dtype=torch.bool)))
    fewer = dataclasses.replace(sw, mask=pack_bitmask(bits == 3))
    with pytest.raises(ValueError, match=r"shape \(1, 9\): the mask has (more set bits than its|9 set bits for its) 4 "
                                         r"stored codes.*sparsify\(\)"):
        densify(extra)
    with pytest.raises(ValueError, match=r"the mask has 1 set bit for its 4 stored codes"):
        densify(fewer)


def test_semi_structured_2_4_is_recorded_unavailable_on_cpu():
    reason = semi_structured_support("cpu")
    assert reason is not None and "CUDA" in reason


def _logits(model, tokens):
    with torch.no_grad():
        return model(tokens).logits


@pytest.mark.parametrize("tiers", [("bf16", "int8"), ("bf16", "fp8_e4m3")])
def test_prune_then_quantize_stores_less_and_computes_the_same(llama, tokens, tiers):
    res = analyze_sensitivity(llama, SensitivityConfig())
    plan = make_plan(res, PlanConfig(tiers=tiers))
    pruned = copy.deepcopy(llama)
    summary = prune_(pruned, res)
    assert summary["pruned_fraction"] >= 0.3
    dense = quantize_model(copy.deepcopy(pruned), plan, "real")
    sparse = quantize_model(copy.deepcopy(pruned), plan, "real", sparse="bitmask")
    assert all(isinstance(sparse.get_submodule(n), SparseQuantLinear) for n in plan.formats)
    assert set(sparse.genai_quant.compute_paths.values()) == {
        f"bitmask_densify_weight_only_{tiers[0]}_dequant", f"bitmask_densify_weight_only_{tiers[1]}_scaled_output"}
    torch.testing.assert_close(_logits(sparse, tokens), _logits(dense, tokens), rtol=0, atol=0)

    rd, rs = compression_report(None, dense), compression_report(None, sparse)
    assert rd["sparse_storage"] is False and rs["sparse_storage"] == "bitmask"
    assert rs["compression_ratio"] > rd["compression_ratio"]  # >= 30% zeros pay for a 1-bit-per-weight mask
    assert rs["compression_ratio_without_mask"] > rs["compression_ratio"]
    assert rs["stored_bytes"] - rs["stored_bytes_without_mask"] == rs["mask_bytes"]
    assert rs["mask_bytes"] == sum(mask_bytes(s) for s in plan.shapes.values())
    assert rs["nonzero_fraction"] <= 0.7
    expected = sum(sparse_stored_bytes(plan.formats[n], plan.shapes[n], sparse.get_submodule(n).qvalues.numel())
                   for n in plan.formats)
    assert rs["stored_bytes"] == expected
    assert rs["safetensors_bytes"] < rd["safetensors_bytes"]


def test_sparse_model_round_trips_through_safetensors(llama, tokens, tmp_path):
    res = analyze_sensitivity(llama, SensitivityConfig())
    prune_(llama, res)
    q = quantize_model(llama, make_plan(res, PlanConfig()), "real", sparse="bitmask")
    back = load_quantized(tiny_llama(seed=3), save_quantized(q, tmp_path / "s.safetensors"))
    assert back.genai_quant.sparse == "bitmask"
    assert compression_report(None, back, with_file=False)["stored_bytes"] == \
        compression_report(None, q, with_file=False)["stored_bytes"]
    torch.testing.assert_close(_logits(back, tokens), _logits(q, tokens), rtol=0, atol=0)


def test_sparse_needs_real_native_and_whole_codes(llama):
    with pytest.raises(ValueError, match="mode='real'"):
        quantize_model(copy.deepcopy(llama), uniform_plan(llama, "int8"), "fake", sparse="bitmask")
    with pytest.raises(ValueError, match="use one of"):
        quantize_model(copy.deepcopy(llama), uniform_plan(llama, "int8"), "real", sparse="2:4")
    with pytest.raises(ValueError, match="int4"):
        quantize_model(copy.deepcopy(llama), uniform_plan(llama, "int4"), "real", sparse="bitmask")
    q = quantize_model(copy.deepcopy(llama), uniform_plan(llama, "int8"), "real")
    assert all(isinstance(q.get_submodule(n), QuantLinear) and not isinstance(q.get_submodule(n), SparseQuantLinear)
               for n in q.genai_quant.plan.formats)
