import math
import random

import pytest
from hypothesis import given, strategies as st

from pytest_genai.claims.stats import bootstrap_ratio_interval, median_coverage, median_interval


def test_median_interval_examples() -> None:
    iv = median_interval([5, 1, 4, 2, 3])
    assert (iv.lo, iv.hi, iv.n) == (1, 5, 5)
    assert iv.level == pytest.approx(1 - 2 / 32)  # too few rounds for 95%: min..max, its real coverage said
    iv = median_interval(list(range(1, 11)))
    assert (iv.lo, iv.hi) == (2, 9) and iv.level == pytest.approx(1 - 2 * 11 / 1024)


def test_median_coverage_matches_simulation() -> None:
    rng = random.Random(1)
    n, k, hits, trials = 10, 2, 0, 4000
    for _ in range(trials):
        xs = sorted(rng.gauss(0, 1) for _ in range(n))
        hits += xs[k - 1] <= 0 <= xs[n - k]
    assert abs(hits / trials - median_coverage(n, k)) < 0.02


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40))
def test_median_interval_contains_the_median(values) -> None:
    import statistics

    iv = median_interval(values)
    assert iv.lo <= statistics.median(values) <= iv.hi
    assert min(values) <= iv.lo and iv.hi <= max(values)


def test_bad_rounds_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 rounds"):
        median_interval([1.0])
    with pytest.raises(ValueError, match="non-finite"):
        median_interval([1.0, math.inf])


def test_bootstrap_ratio_interval_covers_the_true_ratio_and_is_seeded() -> None:
    rng = random.Random(0)
    a = [2.0 + rng.gauss(0, 0.05) for _ in range(20)]
    b = [1.0 + rng.gauss(0, 0.05) for _ in range(20)]
    iv = bootstrap_ratio_interval(a, b)
    assert iv.lo < 2.0 < iv.hi and iv.hi - iv.lo < 0.3
    assert bootstrap_ratio_interval(a, b) == iv
