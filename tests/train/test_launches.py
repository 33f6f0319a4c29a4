"""Comparisons across launches (pytest_genai.train.launches): the plan per scale, the interleaved launch order,
and the ratio with its interval over launches. Nothing launched: the launch functions are counters."""
import statistics

import pytest

from pytest_genai.claims.check import MIN_LEVEL
from pytest_genai.train.config import SCALE_SETTINGS
from pytest_genai.train.launches import (LAUNCH_PLANS, MIN_JUDGING, LaunchPlan, compare_launches, interleave,
                                         launch_plan)


def test_every_scale_has_a_plan_and_the_judging_scales_launch_enough():
    """small and full judge the claims (>= 3 launches a side, and enough for the interval's level); tiny (CI) runs
    fewer, and then its interval cannot reach a verdict's level."""
    assert set(LAUNCH_PLANS) == set(SCALE_SETTINGS)
    for scale in ("small", "full"):
        assert launch_plan(scale).per_side >= max(3, MIN_JUDGING) and launch_plan(scale).judges
    assert not launch_plan("tiny").judges
    assert LaunchPlan(MIN_JUDGING).judges and not LaunchPlan(MIN_JUDGING - 1).judges


@pytest.mark.parametrize("bad", [1, 0, 2.0, True, "3"])
def test_one_launch_a_side_is_refused(bad):
    with pytest.raises(ValueError, match="per_side"):
        LaunchPlan(bad)


def test_an_unknown_scale_names_the_option():
    with pytest.raises(ValueError, match="--genai-scale"):
        launch_plan("huge")


def test_the_order_interleaves_and_counterbalances():
    assert LaunchPlan(2).order() == ("run", "base", "base", "run")
    order = LaunchPlan(5).order()
    assert order == ("run", "base", "base", "run", "run", "base", "base", "run", "run", "base")
    assert order.count("run") == order.count("base") == 5
    assert all(order[i:i + 3] not in (("run",) * 3, ("base",) * 3) for i in range(len(order) - 2))


def test_interleave_launches_in_order_and_reuses_the_first_run():
    log = []

    def launcher(side):
        def launch():
            log.append(side)
            return f"{side}{sum(1 for s in log if s == side)}"
        return launch

    runs, bases = interleave(LaunchPlan(3), launcher("run"), launcher("base"), first_run="run0")
    assert log == ["base", "base", "run", "run", "base"]  # the first run was the caller's
    assert runs == ["run0", "run1", "run2"] and bases == ["base1", "base2", "base3"]
    log.clear()
    runs, bases = interleave(LaunchPlan(2), launcher("run"), launcher("base"), first_run=None)
    assert log == ["base", "base", "run"] and runs[0] is None  # a node other than node 0 ran its first job too
    log.clear()
    runs, bases = interleave(LaunchPlan(2), launcher("run"), launcher("base"))
    assert log == ["run", "base", "base", "run"] and len(runs) == len(bases) == 2


def test_compare_launches_is_the_ratio_of_mean_job_medians():
    slow = [[2.0, 2.1, 1.9], [2.2, 2.2, 2.3], [2.0, 2.0, 2.0], [1.9, 2.1, 2.0], [2.1, 2.0, 2.2]]
    fast = [[1.0, 1.1, 0.9], [1.0, 1.0, 1.0], [1.1, 1.0, 1.2], [0.9, 1.0, 1.0], [1.0, 1.0, 1.1]]
    c = compare_launches(slow, fast)
    expected = statistics.fmean(map(statistics.median, slow)) / statistics.fmean(map(statistics.median, fast))
    assert c.ratio == pytest.approx(expected)
    assert c.slow_medians == (2.0, 2.2, 2.0, 2.0, 2.1) and c.fast_medians == (1.0, 1.0, 1.1, 1.0, 1.0)
    assert c.interval.lo <= c.ratio <= c.interval.hi and c.interval.n == 5 and c.interval.level >= MIN_LEVEL


def test_compare_launches_needs_two_jobs_a_side():
    with pytest.raises(ValueError, match="at least 2 jobs a side"):
        compare_launches([[1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]])
