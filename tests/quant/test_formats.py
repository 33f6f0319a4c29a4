import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.quant.formats import FORMATS, SCALE_BYTES, get_format


def test_known_formats():
    assert set(FORMATS) == {"fp32", "fp16", "bf16", "int8", "int4", "fp8_e4m3", "fp8_e5m2"}


def test_unknown_format_named_in_error():
    with pytest.raises(ValueError, match=r"unknown weight format 'int3'.*known formats"):
        get_format("int3")


@pytest.mark.parametrize("name, group, expected", [
    ("fp32", None, 576 * 1536 * 4),
    ("bf16", None, 576 * 1536 * 2),
    ("int8", None, 576 * 1536 + 576 * SCALE_BYTES),                     # one fp32 scale per output row
    ("int8", 64, 576 * 1536 + 576 * (1536 // 64) * SCALE_BYTES),
    ("int4", None, 576 * 1536 // 2 + 576 * (1536 // 32) * SCALE_BYTES),  # int4 default group 32
    ("fp8_e4m3", 32, 576 * 1536 + 576 * 48 * SCALE_BYTES),
])
def test_stored_bytes_examples(name, group, expected):
    assert get_format(name).stored_bytes((576, 1536), group) == expected


def test_group_must_divide_in_features_and_error_suggests_divisors():
    with pytest.raises(ValueError, match=r"module 'q'.*group_size=128 does not divide in_features=576.*\[16, 32, 64\]"):
        get_format("int8").check_shape((576, 576), 128, where="module 'q'")


def test_int4_needs_even_columns():
    with pytest.raises(ValueError, match="even in_features"):
        get_format("int4").check_shape((4, 7), 7)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 64), cols=st.sampled_from([32, 64, 96, 576]), name=st.sampled_from(sorted(FORMATS)))
def test_scaled_formats_cost_more_than_their_bits_unscaled_exactly_their_bits(rows, cols, name):
    spec = get_format(name)
    nominal = rows * cols * spec.bits // 8
    if spec.scaled:
        assert spec.stored_bytes((rows, cols)) > nominal
    else:
        assert spec.stored_bytes((rows, cols)) == nominal


def test_fp8_e4m3_range_per_device_generation() -> None:
    """Gaudi2's e4m3 spans +-240 (INC's get_fullscale for GAUDI2); H100/H200 and Gaudi3 the OCP 448."""
    from pytest_genai.quant.formats import device_qmax, fp8_e4m3_max

    assert fp8_e4m3_max("gaudi2") == 240.0
    assert fp8_e4m3_max("gaudi3") == fp8_e4m3_max("h100-sxm") == fp8_e4m3_max(None) == 448.0
    assert device_qmax("fp8_e4m3", "gaudi2") == 240.0
    assert device_qmax("fp8_e4m3", "h200") is None and device_qmax("int8", "gaudi2") is None
