import math

import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import metrics as M


def test_fraction_above_example():
    assert M.fraction_above_global_threshold(10, 7, 123.0, 0.5) == 0.7


def test_mean_abs_over_threshold_example():
    assert M.mean_abs_over_threshold(4, 0, 2.0, 0.25) == 2.0


def test_mean_abs_over_zero_threshold_says_how_to_fix():
    with pytest.raises(ValueError, match="lower SensitivityConfig.sparsity"):
        M.mean_abs_over_threshold(4, 0, 0.0, 0.0)


@pytest.mark.parametrize("sparsity, n, k", [(0.3, 10, 3), (0.3, 11, 4), (0.5, 1, 1), (0.01, 50, 1), (0.99, 100, 99),
                                            (0.1, 10, 1), (0.3, 968_884_224, 290_665_268)])  # TinyLlama's linears
def test_threshold_rank_examples(sparsity, n, k):
    assert M.threshold_rank(sparsity, n) == k


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_sparsity_outside_open_interval_rejected(bad):
    with pytest.raises(ValueError, match=r"sparsity=.*strictly between 0 and 1"):
        M.threshold_rank(bad, 10)


def test_compression_and_bits_examples():
    assert M.compression_ratio(400, 100) == 4.0
    assert M.mean_bits_per_weight(100, 100) == 8.0
    assert M.growth_ratio(1300, 100, 1000) == pytest.approx(1.2)
    with pytest.raises(ValueError, match="stored_bytes=0"):
        M.compression_ratio(1, 0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 10**6), frac=st.floats(0, 1), s=st.floats(1e-6, 1e6), c=st.integers(-20, 20))
def test_definitions_invariant_to_power_of_two_scaling(n, frac, s, c):
    above = int(frac * n)
    scale = 2.0 ** c
    for f in M.SENSITIVITY_DEFINITIONS.values():
        assert f(n, above, s * n, s) == f(n, above, s * n * scale, s * scale)


@given(permille=st.integers(1, 999), n=st.integers(1, 10**12))
def test_threshold_rank_is_the_exact_ceiling_for_a_decimal_sparsity(permille, n):
    """k = ceil(s n) exactly, at any model size (a 1e-9 n slack undershot by one past ~1e8 weights)."""
    assert M.threshold_rank(permille / 1000, n) == min(n, max(1, -(-permille * n // 1000)))


@settings(max_examples=25, deadline=None)
@given(sparsity=st.floats(0.001, 0.999), n=st.integers(1, 10**7))
def test_threshold_rank_prunes_at_least_the_target(sparsity, n):
    k = M.threshold_rank(sparsity, n)
    assert 1 <= k <= n
    assert k >= sparsity * n - 1e-6 * n and k - 1 < sparsity * n + 1e-6 * n
    assert math.isfinite(k)
