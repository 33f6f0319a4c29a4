"""The rounds loop: a fixed count, or more rounds until decided within a time budget, and why it stopped."""
import pytest
from hypothesis import given, strategies as st

from pytest_genai.runtime.rounds import (AUTO, BUDGET, CAPPED, DECIDED, FIXED, RoundsPolicy, parse_duration,
                                         parse_rounds, run_rounds)
from pytest_genai.runtime.timing import paired_rounds_until


class Clock:
    """Each round advances the clock by ``step`` seconds."""

    def __init__(self, step: float = 1.0) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        return self.t

    def round(self, _i: int) -> None:
        self.t += self.step


def test_fixed_takes_the_planned_rounds_whatever_decided_says():
    clock = Clock()
    out = run_rounds(clock.round, 5, RoundsPolicy(FIXED), lambda: False, clock=clock)
    assert (out.rounds, out.stopped, out.seconds_measured) == (5, FIXED, 5.0)
    assert "budget_s" not in out.to_json()


def test_auto_adds_rounds_until_decided():
    clock = Clock()
    taken = []
    out = run_rounds(lambda i: (taken.append(i), clock.round(i)), 5, RoundsPolicy(AUTO, budget_s=100),
                     lambda: len(taken) >= 9, clock=clock)
    assert taken == list(range(9))
    assert (out.rounds, out.planned, out.stopped) == (9, 5, DECIDED)
    assert out.to_json()["budget_s"] == 100


def test_auto_stops_before_the_next_cycle_would_pass_the_budget():
    clock = Clock(step=1.0)
    out = run_rounds(clock.round, 4, RoundsPolicy(AUTO, budget_s=3.5), lambda: False, cycle=2, clock=clock)
    # 4 planned (not counted), then 2 + 2 extra would reach 4 s of extra rounds > 3.5: one cycle only
    assert (out.rounds, out.stopped) == (6, BUDGET)


def test_auto_with_no_budget_keeps_the_planned_rounds():
    clock = Clock()
    out = run_rounds(clock.round, 3, RoundsPolicy(AUTO, budget_s=0), lambda: False, clock=clock)
    assert (out.rounds, out.stopped) == (3, BUDGET)


def test_auto_stops_at_the_cap():
    clock = Clock(step=0.0)
    out = run_rounds(clock.round, 3, RoundsPolicy(AUTO, budget_s=1e9, max_rounds=8), lambda: False, cycle=2,
                     clock=clock)
    assert (out.rounds, out.stopped) == (7, CAPPED)


@given(planned=st.integers(1, 30), cycle=st.integers(1, 4), budget=st.floats(0, 50), decide_at=st.integers(0, 80))
def test_auto_never_takes_fewer_than_planned_and_adds_whole_cycles(planned, cycle, budget, decide_at):
    clock = Clock()
    out = run_rounds(clock.round, planned, RoundsPolicy(AUTO, budget_s=budget), lambda: clock.t >= decide_at,
                     cycle=cycle, clock=clock)
    assert out.rounds >= planned and (out.rounds - planned) % cycle == 0
    assert out.rounds - planned <= budget + cycle  # the budget holds up to the cycle it refused
    if out.stopped == DECIDED:
        assert clock.t >= decide_at


def test_paired_rounds_until_keeps_both_orders_equally_often():
    order = []
    a, b, out = paired_rounds_until(lambda: order.append("a"), lambda: order.append("b"), rounds=3,
                                    policy=RoundsPolicy(AUTO, budget_s=60),
                                    decided=lambda a_s, b_s: len(a_s) >= 7)
    assert len(a) == len(b) == out.rounds == 7
    firsts = [order[2 * i] for i in range(7)]
    assert firsts == ["a", "b", "a", "b", "a", "b", "a"]


@pytest.mark.parametrize("text, seconds", [("60", 60.0), ("60s", 60.0), ("1.5m", 90.0), ("2min", 120.0),
                                           ("500ms", 0.5), ("1h", 3600.0), (" 0 ", 0.0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "fast", "-1s", "10 parsecs", "inf"])
def test_bad_durations_name_the_value_and_a_form(text):
    with pytest.raises(ValueError, match="not a duration; write e.g. 60s"):
        parse_duration(text)


def test_rounds_modes():
    assert parse_rounds(" Auto ") == AUTO and parse_rounds("fixed") == FIXED
    with pytest.raises(ValueError, match="'12' is not a rounds mode; write auto"):
        parse_rounds("12")


def test_bad_policy_and_planned():
    with pytest.raises(ValueError, match="rounds mode"):
        RoundsPolicy("sometimes")
    with pytest.raises(ValueError, match="planned rounds >= 1"):
        run_rounds(lambda i: None, 0)
