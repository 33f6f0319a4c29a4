"""Pure change arithmetic: pinned examples and hypothesis properties."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.report.deltas import is_regression, relative_change, speedup, worsening
from pytest_genai.report.pareto import pareto_front
from pytest_genai.devices.specs import ridge_point
from pytest_genai.report.roofline import attainable_tflops, ceiling_polyline

positive = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False)
fraction = st.floats(min_value=0.0, max_value=0.9)


def test_relative_change_examples() -> None:
    assert relative_change(100.0, 95.0) == pytest.approx(-0.05)
    assert relative_change(-2.0, -1.0) == pytest.approx(0.5)  # divides by |baseline|
    assert relative_change(0.0, 0.0) == 0.0
    assert relative_change(0.0, 3.0) == math.inf
    assert math.isnan(relative_change(math.nan, 1.0)) and math.isnan(relative_change(1.0, math.inf))


def test_worsening_follows_direction() -> None:
    assert worsening(100.0, 90.0, "higher") == pytest.approx(0.10)  # throughput dropped 10 %
    assert worsening(100.0, 90.0, "lower") == pytest.approx(-0.10)  # time fell: an improvement
    assert worsening(12.02, 12.39, "lower") == pytest.approx(0.0308, abs=1e-4)  # Paper A's perplexity rise
    assert worsening(1.0, 5.0, "none") == 0.0
    with pytest.raises(ValueError, match="'sideways'"):
        worsening(1.0, 2.0, "sideways")


def test_regression_limit_is_inclusive_and_nonfinite_current_regresses() -> None:
    assert not is_regression(1.0, 0.95, "higher", 0.05)  # exactly at the limit (despite float rounding)
    assert is_regression(1.0, 0.9499, "higher", 0.05)
    assert is_regression(12.02, 12.39, "lower", 0.005)
    assert is_regression(10.0, math.nan, "higher", 0.05)
    assert is_regression(10.0, math.inf, "lower", 0.05)
    assert not is_regression(math.nan, 1.0, "higher", 0.05)  # nothing to regress against
    assert not is_regression(1.0, 100.0, "none", 0.0)


def test_speedup_is_above_one_when_faster() -> None:
    assert speedup(1000.0, 2750.0, "higher") == pytest.approx(2.75)  # tokens/s, Gaudi1 -> Gaudi2
    assert speedup(2.0, 1.0, "lower") == pytest.approx(2.0)  # step time halved
    assert math.isnan(speedup(0.0, 1.0, "higher")) and math.isnan(speedup(1.0, 2.0, "none"))


@settings(max_examples=25, deadline=None)
@given(positive, positive, fraction)
def test_regression_is_antisymmetric_in_direction(b: float, c: float, limit: float) -> None:
    # a worse value for "higher" is a better one for "lower": both can never regress at once
    assert not (is_regression(b, c, "higher", limit) and is_regression(b, c, "lower", limit))
    # no change never regresses, whatever the limit
    assert not is_regression(b, b, "higher", 0.0) and not is_regression(b, b, "lower", 0.0)


@settings(max_examples=25, deadline=None)
@given(positive, positive, fraction, fraction)
def test_regression_is_monotone_in_the_limit(b: float, c: float, l1: float, l2: float) -> None:
    lo, hi = sorted((l1, l2))
    for direction in ("higher", "lower"):
        if is_regression(b, c, direction, hi):
            assert is_regression(b, c, direction, lo)


@settings(max_examples=25, deadline=None)
@given(positive, positive, st.floats(min_value=1e-3, max_value=1e3))
def test_speedup_is_scale_invariant_and_inverts(b: float, c: float, k: float) -> None:
    s = speedup(b, c, "higher")
    assert speedup(b * k, c * k, "higher") == pytest.approx(s, rel=1e-9)
    assert speedup(c, b, "higher") == pytest.approx(1 / s, rel=1e-9)
    assert speedup(b, c, "lower") == pytest.approx(1 / s, rel=1e-9)


def test_pareto_front_example() -> None:
    # (compression ratio, perplexity): higher compression and lower perplexity are better
    points = [(1.0, 12.0), (2.0, 12.1), (2.0, 12.5), (4.0, 12.4), (3.0, 13.0), (6.0, 15.0)]
    assert pareto_front(points, maximize_x=True, maximize_y=False) == [0, 1, 3, 5]
    assert pareto_front([(1.0, math.nan), (2.0, 1.0)]) == [1]
    assert pareto_front([]) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), max_size=15), st.booleans(), st.booleans())
def test_pareto_front_is_exactly_the_non_dominated_set(pts, mx: bool, my: bool) -> None:
    points = [(float(x), float(y)) for x, y in pts]
    front = set(pareto_front(points, mx, my))
    sx, sy = (1 if mx else -1), (1 if my else -1)

    def dominates(a, b) -> bool:
        return sx * a[0] >= sx * b[0] and sy * a[1] >= sy * b[1] and (a[0], a[1]) != (b[0], b[1])

    for i, p in enumerate(points):
        dominated = any(dominates(q, p) for q in points)
        assert (i in front) == (not dominated)


def test_roofline_ridge_and_roof() -> None:
    # H100 SXM dense BF16 989.4 TFLOP/s over 3350 GB/s: ridge ~295 FLOP/byte
    assert ridge_point(989.4e12, 3350.0e9) == pytest.approx(295.35, rel=1e-4)
    assert attainable_tflops(10.0, 989.4, 3350.0) == pytest.approx(33.5)
    assert attainable_tflops(1000.0, 989.4, 3350.0) == 989.4
    xs, ys = ceiling_polyline(989.4, 3350.0, 1.0, 1e4)
    assert xs[1] == pytest.approx(295.35, rel=1e-4) and ys[1] == pytest.approx(989.4)
    with pytest.raises(ValueError, match="positive"):
        ridge_point(0.0, 1.0)


@given(lo=st.floats(0.01, 10.0), width=st.floats(0.0, 5.0), limit=st.floats(0.0, 0.5),
       direction=st.sampled_from(["higher", "lower"]))
def test_an_interval_verdict_never_clears_a_ratio_past_the_threshold(lo, width, limit, direction) -> None:
    """ratio_verdict: 'unchanged' or 'improved' only when every ratio of the interval is within the threshold on the
    bad side, 'regressed' only when every one is past it; a point interval agrees with is_regression."""
    from pytest_genai.report.decision import ratio_verdict

    hi = lo + width
    verdict = ratio_verdict(lo, hi, direction, limit)
    worst = hi if direction == "lower" else lo
    best = lo if direction == "lower" else hi
    if verdict in ("unchanged", "improved"):
        assert not is_regression(1.0, worst, direction, limit)
    if verdict == "regressed":
        assert is_regression(1.0, best, direction, limit)
    if width == 0.0:
        assert (ratio_verdict(lo, lo, direction, limit) == "regressed") == is_regression(1.0, lo, direction, limit)
