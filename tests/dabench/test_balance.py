import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance, load_imbalance_interval

loads = st.lists(st.floats(0.01, 1e6, allow_nan=False), min_size=1, max_size=20)


def test_examples():
    assert load_imbalance([1.0, 1.0, 1.0, 1.0]) == 1.0
    assert load_imbalance([1.0, 1.0, 1.0, 2.0]) == pytest.approx(1.25 / 2.0)
    assert load_imbalance([1.0, 1.0, 1.0, 2.0], "min_over_max") == pytest.approx(0.5)
    assert load_imbalance([3.0]) == 1.0


@settings(max_examples=25, deadline=None)
@given(xs=loads, k=st.floats(1e-3, 1e3))
def test_scale_invariant(xs, k):
    for definition in LI_DEFINITIONS:
        assert load_imbalance([k * x for x in xs], definition) == pytest.approx(load_imbalance(xs, definition))


@settings(max_examples=25, deadline=None)
@given(x=st.floats(0.01, 1e6), n=st.integers(1, 50))
def test_equal_loads_are_balanced(x, n):
    assert load_imbalance([x] * n) == pytest.approx(1.0)
    assert load_imbalance([x] * n, "min_over_max") == 1.0


@settings(max_examples=25, deadline=None)
@given(xs=loads)
def test_bounded_and_ordered(xs):
    mean_max = load_imbalance(xs)
    min_max = load_imbalance(xs, "min_over_max")
    assert 0 < min_max <= mean_max <= 1.0


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(st.floats(0.01, 1e3), min_size=2, max_size=20), extra=st.floats(0.5, 1e3))
def test_growing_the_slowest_load_lowers_li(xs, extra):
    worst = max(range(len(xs)), key=xs.__getitem__)
    grown = list(xs)
    grown[worst] += extra
    # mean/max: (S + e) / (M + e) < S / M because the sum S exceeds the max M when there are two or more loads.
    assert load_imbalance(grown) < load_imbalance(xs)
    assert load_imbalance(grown, "min_over_max") < load_imbalance(xs, "min_over_max")


@pytest.mark.parametrize(
    ("xs", "kwargs", "needle"),
    [([], {}, "at least one"), ([1.0, -1.0], {}, "load #1"), ([0.0, 0.0], {}, "all subtask loads are 0"),
     ([1.0], {"definition": "max_over_min"}, "unknown load-imbalance definition")],
)
def test_errors(xs, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        load_imbalance(xs, **kwargs)


def test_li_interval_brackets_the_li_of_medians_and_is_seeded():
    even = [[1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.0]] * 4
    interval = load_imbalance_interval(even)
    assert 0.97 <= interval.lo <= load_imbalance([1.0] * 4) <= interval.hi <= 1.0
    assert interval.level == pytest.approx(0.95) and interval.n == 7
    assert "LI (mean(load) / max(load)) of subtask medians" in interval.method
    assert load_imbalance_interval(even) == interval  # seeded: a run's verdict is reproducible from its rounds
    # one layer slow in every round: the whole interval sits below 0.9, as the LI of the medians does
    slow = even[:3] + [[1.5 * x for x in even[0]]]
    assert load_imbalance_interval(slow).hi < 0.9
    # one layer slow in 3 of its 7 rounds only (a noisy spell): its median stays near 1, the interval widens down
    burst = even[:3] + [[1.0, 1.6, 1.0, 1.7, 1.0, 1.5, 0.99]]
    wide = load_imbalance_interval(burst)
    assert wide.lo < 0.9 < wide.hi
    assert load_imbalance_interval(slow, "min_over_max").hi < load_imbalance_interval(slow).hi


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 1e3), min_size=2, max_size=9), min_size=1, max_size=6))
def test_li_interval_lies_in_the_unit_range_and_covers_few_rounds_honestly(groups):
    interval = load_imbalance_interval(groups)
    assert 0 < interval.lo <= interval.hi <= 1.0
    n = min(map(len, groups))
    assert interval.n == n and interval.level <= 1 - 2 ** (1 - n) + 1e-12  # 2 rounds cannot claim 95%


@pytest.mark.parametrize(("groups", "kwargs", "needle"), [
    ([[1.0], [1.0, 2.0]], {}, "at least 2 values"),
    ([], {}, "at least one group"),
    ([[1.0, 2.0]], {"definition": "max_over_min"}, "unknown load-imbalance definition"),
    ([[1.0, float("nan")]], {}, "non-finite"),
])
def test_li_interval_errors(groups, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        load_imbalance_interval(groups, **kwargs)
