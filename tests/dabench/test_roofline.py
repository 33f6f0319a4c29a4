import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench import roofline as rl

# A device with 100 TFLOP/s and 2,000 GB/s: ridge at 50 FLOP/byte.
PEAK, BW = 100e12, 2000e9


def test_ridge_point():
    assert rl.ridge_point(PEAK, BW) == pytest.approx(50.0)
    assert rl.Ceilings(100.0, 2000.0, "spec").ridge == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("intensity", "attainable_tflops", "bound"),
    [(1.0, 2.0, "memory"), (25.0, 50.0, "memory"), (50.0, 100.0, "compute"), (400.0, 100.0, "compute")],
)
def test_hand_computed_points(intensity, attainable_tflops, bound):
    assert rl.attainable_flops_per_s(intensity, PEAK, BW) == pytest.approx(attainable_tflops * 1e12)
    assert rl.classify_bound(intensity, rl.ridge_point(PEAK, BW)) == bound


def test_efficiency_against_the_roof_at_that_intensity():
    # 10 TFLOP/s at intensity 10 (roof 20 TFLOP/s) is 50 %; at intensity 100 (roof 100) it is 10 %.
    assert rl.efficiency(10e12, 10.0, PEAK, BW) == pytest.approx(0.5)
    assert rl.efficiency(10e12, 100.0, PEAK, BW) == pytest.approx(0.1)


def test_roofline_point():
    point = rl.RooflinePoint(flops=4e12, bytes_moved=1e11, seconds=0.1, ceilings=rl.Ceilings(100.0, 2000.0, "measured"))
    assert point.intensity == pytest.approx(40.0)
    assert point.achieved_flops_per_s == pytest.approx(40e12)
    assert point.achieved_bytes_per_s == pytest.approx(1e12)
    assert point.bound == "memory"
    assert point.efficiency == pytest.approx(0.5)  # roof at 40 FLOP/B is 80 TFLOP/s


def test_zero_flop_work_gets_bandwidth_efficiency():
    point = rl.RooflinePoint(flops=0, bytes_moved=1e9, seconds=1e-3, ceilings=rl.Ceilings(100.0, 2000.0, "measured"))
    assert point.bound == "memory"
    assert point.efficiency == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan])
def test_bad_inputs_are_named(bad):
    with pytest.raises(ValueError, match="bytes_moved"):
        rl.arithmetic_intensity(1.0, bad)
    with pytest.raises(ValueError, match="Ceilings.gbs"):
        rl.Ceilings(1.0, bad, "spec")


@settings(max_examples=25, deadline=None)
@given(i=st.floats(0, 1e4), j=st.floats(0, 1e4), peak=st.floats(1e9, 1e16), bw=st.floats(1e9, 1e14))
def test_roof_is_monotone_and_capped(i, j, peak, bw):
    lo, hi = sorted((i, j))
    assert rl.attainable_flops_per_s(lo, peak, bw) <= rl.attainable_flops_per_s(hi, peak, bw) <= peak
    if hi > 0:
        on_roof = rl.attainable_flops_per_s(hi, peak, bw)
        assert rl.efficiency(on_roof, hi, peak, bw) == pytest.approx(1.0)
    ridge = rl.ridge_point(peak, bw)
    assert rl.classify_bound(hi, ridge) == ("compute" if hi >= ridge else "memory")
