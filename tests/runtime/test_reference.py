"""The reference kernel and the step-over-reference round: the order of the timed calls and the ratio of medians on a
fake clock, a real kernel that runs and takes time, and bad counts refused."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.runtime.reference import REFERENCE_ID, reference_kernel, step_over_reference


class FakeMachine:
    """A clock that each call advances by its own duration, times a ``slowdown`` factor of the moment (a slow spell
    of the machine slows whichever call runs during it)."""

    def __init__(self, step_s: float, ref_s: float, slowdowns: list[float]) -> None:
        self.now, self.step_s, self.ref_s, self.slowdowns, self.calls = 0.0, step_s, ref_s, slowdowns, []

    def clock(self) -> float:
        return self.now

    def _spell(self) -> float:
        return self.slowdowns[sum(1 for c in self.calls if c == "step") % len(self.slowdowns)]

    def step(self) -> None:
        self.now += self.step_s * self._spell()
        self.calls.append("step")

    def reference(self) -> None:
        self.now += self.ref_s * self._spell()
        self.calls.append("ref")


def test_each_step_is_timed_right_after_its_reference_and_the_ratio_is_of_medians() -> None:
    m = FakeMachine(2e-3, 1e-3, [1.0, 1.0, 3.0])
    step_s, ref_s, ratio = step_over_reference(m.step, m.reference, 3, clock=m.clock)
    assert m.calls == ["ref", "step"] * 3
    assert (step_s, ref_s) == pytest.approx((2e-3, 1e-3)) and ratio == pytest.approx(2.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.5, 4.0), min_size=1, max_size=9), st.integers(1, 15))
def test_a_spell_that_slows_both_alike_leaves_the_ratio_where_it_was(spells, steps) -> None:
    """Any sequence of machine speeds, each shared by a reference and the step after it: the ratio is the code's."""
    m = FakeMachine(3e-3, 1e-3, spells)
    assert step_over_reference(m.step, m.reference, steps, clock=m.clock)[2] == pytest.approx(3.0)


def test_bad_counts_and_a_clock_that_cannot_time_the_reference_are_refused() -> None:
    with pytest.raises(ValueError, match="steps must be at least 1"):
        step_over_reference(lambda: None, lambda: None, 0)
    with pytest.raises(ValueError, match="the clock cannot time it"):
        step_over_reference(lambda: None, lambda: None, 3, clock=lambda: 0.0)


def test_the_real_kernel_runs_and_takes_time() -> None:
    pytest.importorskip("torch")
    ref = reference_kernel()
    ref()
    step_s, ref_s, ratio = step_over_reference(ref, ref, 5)
    assert ref_s > 0 and step_s > 0 and 0.2 < ratio < 5
    assert REFERENCE_ID.endswith("-v1")
