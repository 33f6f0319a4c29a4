"""Round-trip error bounds, idempotence and storage layout of every format (hypothesis properties)."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import codecs as C
from pytest_genai.quant.formats import FORMATS, get_format

SCALED = ["int8", "int4", "fp8_e4m3", "fp8_e5m2"]


@st.composite
def weights(draw):
    rows = draw(st.integers(1, 24))
    cols = draw(st.sampled_from([32, 64, 96]))
    seed = draw(st.integers(0, 2**31 - 1))
    log_mag = draw(st.floats(-12, 6))
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=g) * (2.0 ** log_mag)
    if draw(st.booleans()):  # outliers
        w[0, 0] *= 50
    if draw(st.booleans()) and rows > 1:  # an all-zero row
        w[-1] = 0
    return w


def _same_codes(a, b):
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b)


@settings(max_examples=25, deadline=None)
@given(w=weights(), fmt=st.sampled_from(sorted(FORMATS)), group=st.sampled_from([None, 32]))
def test_round_trip_within_documented_bound(w, fmt, group):
    if fmt == "fp16" and w.abs().max() > 65504:
        return
    q = C.quantize(w, fmt, group)
    err = (w - C.dequantize(q)).abs()
    bound = C.error_bound(q, w)
    # the bound itself is exact math; allow fp32 rounding of the divide and the product
    slack = 4 * torch.finfo(torch.float32).eps * (w.abs() + bound)
    assert bool((err <= bound + slack).all()), f"{fmt}: max err/bound {(err / bound.clamp_min(1e-38)).max()}"


@settings(max_examples=25, deadline=None)
@given(w=weights(), fmt=st.sampled_from(sorted(FORMATS)), group=st.sampled_from([None, 32]))
def test_quantization_is_idempotent(w, fmt, group):
    if fmt == "fp16" and w.abs().max() > 65504:
        return
    q1 = C.quantize(w, fmt, group)
    q2 = C.quantize(C.dequantize(q1), fmt, group)
    assert _same_codes(q1.data, q2.data)
    assert (q1.scale is None) == (q2.scale is None)
    if q1.scale is not None:
        assert torch.equal(q1.scale, q2.scale)


@settings(max_examples=25, deadline=None)
@given(w=weights(), fmt=st.sampled_from(sorted(FORMATS)), group=st.sampled_from([None, 32]))
def test_stored_bytes_match_the_format_spec(w, fmt, group):
    if fmt == "fp16" and w.abs().max() > 65504:
        return
    q = C.quantize(w, fmt, group)
    assert q.nbytes() == get_format(fmt).stored_bytes(tuple(w.shape), group)
    assert q.data.dtype == C.storage_dtype(fmt)


@pytest.mark.parametrize("fmt", SCALED)
def test_scales_are_amax_over_qmax_rounded_up(fmt):
    w = torch.tensor([[0.5, -2.0, 1.0, 0.25] * 8, [0.0] * 32])
    q = C.quantize(w, fmt)
    qmax = get_format(fmt).qmax
    assert q.scale.shape == (2, 1)
    assert float(q.scale[0, 0]) >= 2.0 / qmax and float(q.scale[0, 0]) <= 2.0 / qmax * (1 + 2**-15)
    assert float(q.scale[1, 0]) == 1.0  # all-zero row: scale 1, codes 0
    assert torch.equal(C.dequantize(q)[1], torch.zeros(32))


def test_int8_codes_example():
    w = torch.tensor([[127.0, -63.5, 0.2, 1.0]])
    q = C.quantize(w, "int8")
    assert q.scale.item() == 1.0
    assert q.data.tolist() == [[127, -64, 0, 1]]  # round half to even: -63.5 -> -64


def test_int4_packs_two_codes_per_byte():
    w = torch.tensor([[7.0, -7.0, 1.0, 0.0] * 8])
    q = C.quantize(w, "int4", 32)
    assert q.data.dtype == torch.uint8 and q.data.shape == (1, 16)
    assert q.data[0, 0].item() == (15 | (1 << 4))  # codes 7 -> 15 (low nibble), -7 -> 1 (high nibble)
    assert C.unpack_int4(q.data)[0, :4].tolist() == [7, -7, 1, 0]


def test_fp8_uses_torch_float8_dtypes():
    w = torch.randn(4, 32)
    assert C.quantize(w, "fp8_e4m3").data.dtype == torch.float8_e4m3fn
    assert C.quantize(w, "fp8_e5m2").data.dtype == torch.float8_e5m2


@pytest.mark.parametrize("bad, match", [
    (torch.zeros(3), "2-D weight matrix"),
    (torch.zeros(0, 4), "empty"),
    (torch.tensor([[float("nan"), 1.0]]), "inf or nan"),
    (torch.ones(2, 2, dtype=torch.int32), "not floating point"),
])
def test_bad_weights_rejected_with_reason(bad, match):
    with pytest.raises(ValueError, match=match):
        C.quantize(bad, "int8", where="module 'x'")


def test_fp16_overflow_rejected():
    with pytest.raises(ValueError, match="overflows fp16.*use bf16"):
        C.quantize(torch.full((2, 2), 1e6), "fp16")


def test_select_rows_dequantizes_like_the_full_matrix():
    w = torch.randn(10, 64)
    q = C.quantize(w, "int4", 32)
    idx = torch.tensor([3, 0, 3, 9])
    assert torch.equal(C.dequantize(q.select_rows(idx)), C.dequantize(q)[idx])


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_lookup_decode_equals_the_cast(fmt):
    q = C.quantize(torch.randn(16, 64) * 3, fmt)
    every_code = torch.arange(256, dtype=torch.uint8).view(q.data.dtype).reshape(4, 64)
    q_all = C.QuantizedWeight(fmt, every_code, torch.ones(4, 1), (4, 64), None)
    for qq in (q, q_all):
        assert torch.allclose(C.codes_as(qq, torch.float32), qq.data.float(), rtol=0, atol=0, equal_nan=True)


@st.composite
def int8_inputs(draw):
    """fp32 matrices for the per-channel int8 kernel: any magnitude (down to scales that are subnormal), rows of
    zeros, values exactly halfway between two codes (the rounding ties), and widths that are not a multiple of 16."""
    rows = draw(st.integers(1, 12))
    cols = draw(st.integers(1, 200))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    w = torch.randn(rows, cols, generator=g) * (2.0 ** draw(st.floats(-140, 60)))
    if draw(st.booleans()):  # ties: k + 0.5 codes of a row whose amax is exactly 127 codes
        k = torch.randint(-127, 127, (rows, cols), generator=g).float() + 0.5
        k[:, 0] = 127
        w = k * (2.0 ** draw(st.integers(-20, 20)))
    if draw(st.booleans()):
        w[-1] = 0
    return w.contiguous()


@settings(max_examples=200, deadline=None)
@given(w=int8_inputs())
def test_the_int8_kernel_gives_the_torch_codes_and_scales(w):
    if C._int8_library() is None:
        pytest.skip("no compiled int8 kernel here")
    got = C.quantize(w, "int8")
    want = C._quantize_torch(w, get_format("int8"), None)
    assert torch.equal(got.data, want.data)
    assert torch.equal(got.scale, want.scale)
    assert got.shape == want.shape and got.group_size == want.group_size


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_the_int8_kernel_rejects_inf_and_nan_like_torch(bad):
    w = torch.ones(5, 40)
    w[3, 17] = bad
    with pytest.raises(ValueError, match="module 'x': weight contains inf or nan"):
        C.quantize(w, "int8", where="module 'x'")


def test_the_int8_kernel_redoes_no_row_it_computed_like_torch(monkeypatch):
    """A row whose scale differs from torch's arithmetic is redone by torch (none does: subnormal scales agree too);
    a kernel whose scale arithmetic drifted would pass the equality property through the redo alone, so count the
    redone rows, then make torch's arithmetic differ and check that the redo gives torch's result."""
    if C._int8_library() is None:
        pytest.skip("no compiled int8 kernel here")
    redone = []
    original = C._quantize_torch
    monkeypatch.setattr(C, "_quantize_torch", lambda w, *a, **k: redone.append(w.shape[0]) or original(w, *a, **k))
    g = torch.Generator().manual_seed(0)
    for log_mag in (-135, -30, -8, 0, 12):
        C.quantize(torch.randn(64, 300, generator=g) * 2.0 ** log_mag, "int8")
    assert redone == []
    rounded = C.round_scale_up  # torch's scales now round a row's scale differently from the kernel's
    monkeypatch.setattr(C, "round_scale_up", lambda s: torch.where(s > 0.1, rounded(s) * 2, rounded(s)))
    w = torch.randn(5, 70, generator=g)
    w[2] *= 1000  # its scale (> 0.1) is the one torch now rounds differently
    got = C.quantize(w, "int8")
    assert redone == [1]  # the differing row only
    want = original(w, get_format("int8"), None)
    assert torch.equal(got.data, want.data) and torch.equal(got.scale, want.scale)


@pytest.mark.parametrize("fmt", ["int8", "fp8_e4m3", "fp8_e5m2", "bf16"])
def test_a_row_too_small_for_a_scale_gets_the_smallest_normal_scale_and_zero_codes(fmt):
    """amax / qmax underflowed to 0 for a subnormal row: a 0 scale saturated its codes (127, -127), which the bitmask
    layout would store as nonzeros. The scale is floored at the smallest normal fp32 (codecs.MIN_SCALE)."""
    w = torch.tensor([[1e-44, -1e-44, 0.0, 0.0], [0.5, -0.25, 0.1, 0.0]])
    qw = C.quantize(w, fmt, None)
    if qw.scale is None:
        return  # a float format stored without scales: nothing to underflow
    assert bool((qw.scale > 0).all())
    assert float(qw.scale[0, 0]) == C.MIN_SCALE and not bool(qw.data[0].float().ne(0).any())
    assert float(C.dequantize(qw)[0].abs().max()) <= 1e-44


@settings(max_examples=60, deadline=None)
@given(log_mag=st.floats(-149, -110), fmt=st.sampled_from(SCALED), seed=st.integers(0, 2**31 - 1))
def test_rows_whose_scale_would_be_subnormal_keep_the_bound_and_idempotence(log_mag, fmt, seed):
    """amax / qmax subnormal: it kept a few bits, round_scale_up could not round it up, the scale came out below
    amax / qmax, the top codes clamped and the error passed s/2 (int8 at |w| ~ 4e-43: 60x; fp8_e4m3 5x)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(3, 32, generator=g, dtype=torch.float64) * 2.0 ** log_mag
    w = w.float()
    w[1] = torch.randn(32, generator=g)  # an ordinary row beside them
    q = C.quantize(w, fmt, None if fmt != "int4" else 32)
    assert bool((q.scale >= C.MIN_SCALE).all())
    err = (w - C.dequantize(q)).abs()
    bound = C.error_bound(q, w)
    slack = 4 * torch.finfo(torch.float32).eps * (w.abs() + bound)
    assert bool((err <= bound + slack).all()), f"{fmt}: max err/bound {(err / bound.clamp_min(1e-45)).max()}"
    again = C.quantize(C.dequantize(q), fmt, None if fmt != "int4" else 32)
    # the same codes, and the same dequantized weight (a row of zero codes dequantizes to zeros, whose scale is 1)
    assert _same_codes(q.data, again.data) and torch.equal(C.dequantize(q), C.dequantize(again))


def test_fp8_codes_scaled_to_a_narrower_device_range_stay_inside_it() -> None:
    import torch

    from pytest_genai.quant.codecs import codes_as, dequantize, quantize

    w = torch.randn(32, 64, generator=torch.Generator().manual_seed(3))
    wide = codes_as(quantize(w, "fp8_e4m3"), torch.float32).abs()
    narrow_qw = quantize(w, "fp8_e4m3", qmax=240.0)
    narrow = codes_as(narrow_qw, torch.float32).abs()
    assert float(wide.max()) == 448.0 and float(narrow.max()) == 240.0
    assert torch.allclose(dequantize(narrow_qw), w, rtol=2**-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"qmax=100.0 for int8: only a scaled float format"):
        quantize(w, "int8", qmax=100.0)
