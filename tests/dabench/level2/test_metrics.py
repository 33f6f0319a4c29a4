import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench.level2 import metrics

pos = st.floats(min_value=1e-6, max_value=1e6)


def test_paper_examples():
    # RDU TP 2 -> 4 chips "loses 40%": ratio 0.6, efficiency 0.3 relative to linear.
    assert metrics.scaling_throughput_ratio(60.0, 100.0) == pytest.approx(0.6)
    assert metrics.scaling_efficiency(60.0, 100.0, 4, 2) == pytest.approx(0.3)
    assert metrics.mixed_precision_speedup(134.3, 100.0) == pytest.approx(1.343)
    assert metrics.scaling_efficiency(200.0, 100.0, 2) == 1.0


@settings(max_examples=25, deadline=None)
@given(pos, pos, st.integers(2, 64))
def test_efficiency_is_ratio_over_chips(a, b, n):
    assert metrics.scaling_efficiency(a, b, n) == pytest.approx(metrics.scaling_throughput_ratio(a, b) / n)


def test_time_share_clips_and_validates():
    assert metrics.time_share(0.25, 1.0) == 0.25
    assert metrics.time_share(1.2, 1.0) == 1.0
    with pytest.raises(ValueError, match="part_s"):
        metrics.time_share(-1.0, 1.0)
    with pytest.raises(ValueError, match="total_s"):
        metrics.time_share(1.0, 0.0)


@pytest.mark.parametrize("args, match", [((0.0, 1.0), "throughput_large"), ((1.0, float("inf")), "throughput_small")])
def test_ratio_rejects_non_positive(args, match):
    with pytest.raises(ValueError, match=match):
        metrics.scaling_throughput_ratio(*args)


def test_efficiency_needs_more_chips():
    with pytest.raises(ValueError, match="must exceed"):
        metrics.scaling_efficiency(1.0, 1.0, 2, 2)
