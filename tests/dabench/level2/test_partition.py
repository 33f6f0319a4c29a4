import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench.level2.partition import (
    Partition,
    bubble_fraction_modeled,
    naive_partition,
    optimal_partition,
    pipeline_step_time_modeled,
)

# Loads are seconds or FLOPs: 0 or well inside the normal float range. A subnormal load (5e-324) scaled by 0.5
# underflows to 0, which the partition rightly refuses; that is float arithmetic, not the property under test.
loads_st = st.lists(st.one_of(st.just(0.0), st.floats(min_value=1e-6, max_value=1e3)), min_size=1,
                    max_size=12).filter(any)
SETTINGS = settings(max_examples=25, deadline=None)


def brute_force_max(loads, stages):
    n = len(loads)
    best = math.inf
    for cuts in itertools.combinations(range(1, n), stages - 1):
        bounds = (0, *cuts, n)
        best = min(best, Partition(tuple(loads), bounds).max_stage_load)
    return best


def test_heavy_last_layer_example():
    # 4 blocks of 1 and an LM head of 4: equal counts put block 3 with the head.
    loads = [1.0, 1.0, 1.0, 1.0, 4.0]
    naive = naive_partition(loads, 2)
    best = optimal_partition(loads, 2)
    assert naive.bounds == (0, 3, 5) and naive.stage_loads == (3.0, 5.0)
    assert best.bounds == (0, 4, 5) and best.stage_loads == (4.0, 4.0)
    assert best.load_imbalance == 1.0
    assert naive.load_imbalance == pytest.approx(4.0 / 5.0)
    assert best.throughput_bound == 0.25 and naive.throughput_bound == 0.2
    assert best.id == "0-3|4" and naive.id == "0-2|3-4"
    assert best.layers_per_stage == (4, 1)


def test_naive_split_gives_extra_layers_to_the_first_stages():
    assert naive_partition([1.0] * 7, 3).layers_per_stage == (3, 2, 2)


def test_optimal_matches_classic_example():
    # Linear partition textbook case: 1..9 into 3 ranges -> max 17 ({1..5}=15, {6,7}=13, {8,9}=17).
    part = optimal_partition([float(i) for i in range(1, 10)], 3)
    assert part.max_stage_load == 17.0


@SETTINGS
@given(loads_st, st.integers(1, 4))
def test_optimal_is_exact_and_never_worse_than_naive(loads, stages):
    stages = min(stages, len(loads))
    best = optimal_partition(loads, stages)
    assert best.stages == stages
    assert best.max_stage_load <= naive_partition(loads, stages).max_stage_load
    assert best.max_stage_load == brute_force_max(loads, stages)


@SETTINGS
@given(loads_st, st.integers(1, 4))
def test_stage_li_in_unit_interval(loads, stages):
    stages = min(stages, len(loads))
    for part in (optimal_partition(loads, stages), naive_partition(loads, stages)):
        assert 0.0 < part.load_imbalance <= 1.0
        assert math.fsum(part.stage_loads) == pytest.approx(math.fsum(loads), rel=1e-12)


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 6), st.floats(min_value=1e-3, max_value=1e3))
def test_equal_loads_are_balanced(per_stage, stages, w):
    part = optimal_partition([w] * (per_stage * stages), stages)
    assert part.load_imbalance == pytest.approx(1.0)
    assert part.layers_per_stage == (per_stage,) * stages


@SETTINGS
@given(loads_st)
def test_more_stages_never_raise_the_bottleneck(loads):
    maxima = [optimal_partition(loads, s).max_stage_load for s in range(1, len(loads) + 1)]
    assert all(b <= a for a, b in zip(maxima, maxima[1:]))
    assert maxima[-1] == max(loads)


@SETTINGS
@given(loads_st, st.floats(min_value=1e-3, max_value=1e3))
def test_scaling_loads_keeps_the_partition(loads, factor):
    stages = min(2, len(loads))
    a = optimal_partition(loads, stages)
    b = optimal_partition([x * factor for x in loads], stages)
    assert b.max_stage_load == pytest.approx(a.max_stage_load * factor, rel=1e-9)


@pytest.mark.parametrize("loads, stages, match", [
    ([], 1, "empty"),
    ([1.0, -1.0], 1, "layer load #1"),
    ([1.0, float("nan")], 1, "layer load #1"),
    ([0.0, 0.0], 1, "every per-layer load is 0"),
    ([1.0, 2.0], 3, "at most 2 stages"),
    ([1.0, 2.0], 0, "positive int"),
])
def test_bad_inputs_name_the_problem(loads, stages, match):
    with pytest.raises(ValueError, match=match):
        optimal_partition(loads, stages)


def test_partition_bounds_validated():
    with pytest.raises(ValueError, match="must start at 0 and end at the layer count 3"):
        Partition((1.0, 1.0, 1.0), (0, 2))
    with pytest.raises(ValueError, match="strictly increasing"):
        Partition((1.0, 1.0, 1.0), (0, 2, 2, 3))


def test_gpipe_model_examples():
    assert bubble_fraction_modeled(1, 8) == 0.0
    assert bubble_fraction_modeled(2, 4) == pytest.approx(1 / 5)
    assert pipeline_step_time_modeled([1.0, 3.0], 4) == 15.0
    with pytest.raises(ValueError, match="micro_batches"):
        bubble_fraction_modeled(2, 0)
