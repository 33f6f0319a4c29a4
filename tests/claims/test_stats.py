import math
import random

import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.stats import (bootstrap_ratio_interval, hierarchical_ratio_interval, median_coverage,
                                      median_interval)


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


def _jobs(rng: random.Random, medians: list[float], n: int = 30, jitter: float = 0.05) -> list[list[float]]:
    return [[m * (1 + rng.gauss(0, jitter)) for _ in range(n)] for m in medians]


def test_hierarchical_ratio_interval_covers_the_ratio_of_mean_job_medians_and_is_seeded() -> None:
    rng = random.Random(0)
    num, den = _jobs(rng, [2.0, 2.0, 2.0]), _jobs(rng, [1.0, 1.0])
    iv = hierarchical_ratio_interval(num, den)
    assert iv.lo < 2.0 < iv.hi and iv.hi - iv.lo < 0.15 and iv.n == 2
    assert "two-stage" in iv.method
    assert hierarchical_ratio_interval(num, den) == iv


@pytest.mark.parametrize(("jobs", "level"), [(2, 0.5), (4, 0.875), (5, 0.9375), (6, 0.95)])
def test_a_ratio_interval_from_few_jobs_or_rounds_claims_no_more_than_they_can_cover(jobs, level) -> None:
    """Resampling k jobs (or k rounds) stays within their range, which misses the middle with probability 2^(1-k):
    the level is capped there, so under 5 a side MIN_LEVEL makes the verdict inconclusive."""
    rng = random.Random(3)
    iv = hierarchical_ratio_interval(_jobs(rng, [1.0] * jobs), _jobs(rng, [1.0] * (jobs + 1)))
    assert iv.level == pytest.approx(level) and iv.n == jobs
    rounds = bootstrap_ratio_interval([1.0 + 0.01 * i for i in range(jobs)], [1.0 + 0.01 * i for i in range(jobs + 3)])
    assert rounds.level == pytest.approx(level) and rounds.n == jobs


def test_a_spread_between_jobs_widens_the_hierarchical_interval() -> None:
    # the same values within each job; only the jobs' medians differ (a load change between jobs)
    rng = random.Random(1)
    steady = hierarchical_ratio_interval(_jobs(rng, [1.0, 1.0, 1.0]), _jobs(rng, [1.0, 1.0]))
    rng = random.Random(1)
    shifted = hierarchical_ratio_interval(_jobs(rng, [0.9, 1.0, 1.1]), _jobs(rng, [0.9, 1.1]))
    assert shifted.hi - shifted.lo > 2 * (steady.hi - steady.lo)
    assert shifted.lo < 0.95 and shifted.hi > 1.05


@pytest.mark.parametrize("num, den, match", [
    ([[1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], "at least 2 jobs"),
    ([[1.0, 1.0], [1.0]], [[1.0, 1.0], [1.0, 1.0]], "at least 2 jobs of at least 2 values"),
    ([[1.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]], "must be positive"),
    ([[1.0, float("nan")], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], "non-finite"),
])
def test_hierarchical_ratio_interval_rejects_unusable_jobs(num, den, match) -> None:
    with pytest.raises(ValueError, match=match):
        hierarchical_ratio_interval(num, den)


# --- paired accuracy: McNemar and the exact interval of the drop ---------------------------------------------------
from pytest_genai.claims import check_value  # noqa: E402
from pytest_genai.claims.model import Claim  # noqa: E402
from pytest_genai.stats import (  # noqa: E402
    binom_cdf,
    clopper_pearson,
    mcnemar_exact_p,
    paired_drop_interval,
)

DROP_CLAIM = Claim("A1.x_acc_drop", "A", "A1", "acc_drop", "1", "lower", max=0.02)


def test_mcnemar_exact_examples() -> None:
    assert mcnemar_exact_p(3, 0) == pytest.approx(0.25)  # 2 * 0.5**3
    assert mcnemar_exact_p(0, 3) == pytest.approx(0.25)
    assert mcnemar_exact_p(2, 2) == 1.0 and mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact_p(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 512)


def test_clopper_pearson_examples() -> None:
    lo, hi = clopper_pearson(3, 40)  # scipy.stats.beta.ppf(0.025, 3, 38), beta.ppf(0.975, 4, 37)
    assert lo == pytest.approx(0.0157421798, abs=1e-8) and hi == pytest.approx(0.2038647487, abs=1e-8)
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025 ** 0.1)
    assert clopper_pearson(10, 10) == (pytest.approx(0.025 ** 0.1), 1.0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(5, 4)


def test_forty_examples_with_three_flips_cannot_resolve_a_two_point_bound() -> None:
    iv = paired_drop_interval(3, 0, 40)
    assert iv.lo < 0.02 < iv.hi and iv.n == 40
    assert iv.method == "McNemar exact, discordant 3/0, p=0.25"
    verdict = check_value(DROP_CLAIM, 3 / 40, iv)
    assert verdict.verdict == "inconclusive"
    assert "McNemar exact, discordant 3/0, p=0.25" in verdict.message


def test_enough_examples_decide_either_way() -> None:
    assert check_value(DROP_CLAIM, 20 / 10042, paired_drop_interval(60, 40, 10042)).verdict == "pass"
    assert check_value(DROP_CLAIM, 20 / 40, paired_drop_interval(20, 0, 40)).verdict == "fail"
    assert check_value(DROP_CLAIM, 0.0, paired_drop_interval(0, 0, 1000)).verdict == "pass"
    assert check_value(DROP_CLAIM, 0.0, paired_drop_interval(0, 0, 40)).verdict == "inconclusive"


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 300), st.data())
def test_paired_drop_interval_properties(n, data) -> None:
    b = data.draw(st.integers(0, n))
    c = data.draw(st.integers(0, n - b))
    iv = paired_drop_interval(b, c, n)
    assert -1.0 <= iv.lo <= (b - c) / n <= iv.hi <= 1.0  # contains the point estimate
    mirror = paired_drop_interval(c, b, n)  # swapping the runs negates the drop
    assert mirror.lo == pytest.approx(-iv.hi, abs=1e-9) and mirror.hi == pytest.approx(-iv.lo, abs=1e-9)
    assert 0.0 <= mcnemar_exact_p(b, c) <= 1.0
    more = paired_drop_interval(4 * b, 4 * c, 4 * n)  # the same shares from more examples: narrower
    assert more.hi - more.lo <= iv.hi - iv.lo + 1e-9


@settings(deadline=None)
@given(st.integers(1, 60), st.data())
def test_binom_cdf_matches_the_sum_and_clopper_pearson_hits_its_tails(n, data) -> None:
    k = data.draw(st.integers(0, n))
    p = data.draw(st.floats(0.01, 0.99))
    exact = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))
    assert binom_cdf(k, n, p) == pytest.approx(exact, abs=1e-12)
    lo, hi = clopper_pearson(k, n)
    if k > 0:
        assert 1 - binom_cdf(k - 1, n, lo) == pytest.approx(0.025, abs=1e-9)
    if k < n:
        assert binom_cdf(k, n, hi) == pytest.approx(0.025, abs=1e-9)


def test_examples_to_decide_a_paired_drop_at_the_same_flip_rates() -> None:
    """40 examples cannot decide a 2-point bound; the same rates with more examples do, and the count says how many."""
    from pytest_genai.stats import examples_to_decide, paired_counts, paired_drop_interval

    assert paired_counts(paired_drop_interval(3, 1, 40)) == (3, 1)
    none = examples_to_decide(0, 0, 40, None, 0.02)
    assert 200 <= none <= 230  # no flip: the interval's half-width falls under 2 points near 220 examples
    iv = paired_drop_interval(0, 0, none)
    assert iv.hi <= 0.02 and paired_drop_interval(0, 0, int(none * 0.95)).hi > 0.02
    worse = examples_to_decide(3, 0, 40, None, 0.02)  # a 7.5-point drop: decided as a failure
    assert paired_drop_interval(round(3 * worse / 40), 0, worse).lo > 0.02
    assert examples_to_decide(1, 0, 50, None, 0.02) is None  # a drop right at the bound never decides
    assert examples_to_decide(0, 0, 40, None, 0.5) == 40  # already decided


def test_an_undecided_accuracy_drop_says_how_many_examples_would_decide_it() -> None:
    from pytest_genai.claims import load_claims
    from pytest_genai.claims.check import check_value
    from pytest_genai.stats import paired_drop_interval

    claim = next(c for c in load_claims() if c.id == "A1.hellaswag_acc_drop")
    verdict = check_value(claim, 0.0, paired_drop_interval(0, 0, 40))
    assert verdict.verdict == "inconclusive"
    assert "(0 to wrong, 0 to right of 40) about 2" in verdict.message and "examples would decide it" in verdict.message
