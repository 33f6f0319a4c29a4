import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench.level2.knee import batch_scaling_efficiency, plateau_batch

SETTINGS = settings(max_examples=25, deadline=None)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def test_wse_like_curve_plateaus_at_the_knee():
    # Saturating throughput T = b / (b + 25): gains after b=200 stay under 10%.
    batches = (50, 100, 200, 400, 800)
    t = [b / (b + 25) for b in batches]
    assert plateau_batch(batches, t, min_gain=0.10) == 200


def test_linear_gains_never_plateau():
    assert plateau_batch(BATCHES, [3.0 * b for b in BATCHES]) is None
    assert batch_scaling_efficiency(BATCHES, [3.0 * b for b in BATCHES]) == pytest.approx((1.0,) * len(BATCHES))


def test_flat_curve_plateaus_at_the_first_point():
    assert plateau_batch(BATCHES, [5.0] * len(BATCHES)) == 1


def test_a_late_jump_moves_the_plateau():
    t = [1.0, 1.9, 2.0, 2.05, 3.0]
    assert plateau_batch((1, 2, 4, 8, 16), t) is None
    assert plateau_batch((1, 2, 4, 8, 16), [1.0, 1.9, 2.0, 2.05, 2.08]) == 2  # 2.08 / 1.9 < 1.1
    assert plateau_batch((1, 2, 4, 8, 16), [1.0, 1.9, 2.0, 2.05, 2.1]) == 4  # 2.1 / 1.9 > 1.1


curve = st.lists(st.floats(min_value=1e-3, max_value=1e6), min_size=2, max_size=len(BATCHES))


@SETTINGS
@given(curve, st.floats(min_value=1e-3, max_value=1e3))
def test_scale_invariant(t, factor):
    b = BATCHES[: len(t)]
    assert plateau_batch(b, t) == plateau_batch(b, [x * factor for x in t])


@SETTINGS
@given(curve, st.floats(0.0, 0.5), st.floats(0.0, 0.5))
def test_larger_tolerance_plateaus_no_later(t, g1, g2):
    b = BATCHES[: len(t)]
    lo, hi = sorted((g1, g2))
    p_lo, p_hi = plateau_batch(b, t, min_gain=lo), plateau_batch(b, t, min_gain=hi)
    if p_lo is not None:
        assert p_hi is not None and p_hi <= p_lo


@SETTINGS
@given(curve)
def test_nothing_after_the_plateau_gains_more_than_the_tolerance(t):
    b = BATCHES[: len(t)]
    p = plateau_batch(b, t, min_gain=0.1)
    if p is not None:
        i = b.index(p)
        assert max(t[i + 1:]) <= 1.1 * t[i]


@pytest.mark.parametrize("batches, t, match", [
    ((1, 2), (1.0,), "one throughput per batch"),
    ((2, 1), (1.0, 1.0), "strictly increasing"),
    ((0, 1), (1.0, 1.0), "positive ints"),
    ((1, 2), (1.0, 0.0), "throughput #1"),
    ((), (), "at least one"),
])
def test_bad_points(batches, t, match):
    with pytest.raises(ValueError, match=match):
        plateau_batch(batches, t)


def test_bad_tolerance():
    with pytest.raises(ValueError, match="min_gain"):
        plateau_batch((1, 2), (1.0, 2.0), min_gain=-0.1)
