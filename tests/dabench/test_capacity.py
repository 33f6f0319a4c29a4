"""The capacity bisection on a fake allocator, the memory model against the tensor tracker, and the real search."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.dabench import capacity
from pytest_genai.dabench.config import DecoderConfig


class FakeAllocator:
    """Fails (like an out-of-memory) when asked for more than ``capacity`` layers; counts calls."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.calls: list[int] = []

    def __call__(self, n: int) -> bool:
        self.calls.append(n)
        return n <= self.capacity


@settings(max_examples=25, deadline=None)
@given(cap=st.integers(1, 5000), start=st.integers(1, 8))
def test_bisection_returns_exactly_the_capacity(cap, start):
    fake = FakeAllocator(cap)
    result = capacity.largest_fitting(fake, start=start, limit=1 << 16)
    assert result.max_fitting == (cap if cap >= start else 0)
    assert not result.hit_limit
    assert len(fake.calls) <= 2 * (cap.bit_length() + 2)  # logarithmic, not linear
    assert tuple(zip(fake.calls, (n <= cap for n in fake.calls))) == result.probes


@settings(max_examples=60, deadline=None)
@given(cap=st.integers(0, 3000), guess=st.integers(1, 4000), start=st.integers(1, 8),
       limit=st.sampled_from([64, 2048, 1 << 16]))
def test_a_guess_changes_the_probes_never_the_answer(cap, guess, start, limit):
    plain = capacity.largest_fitting(FakeAllocator(cap), start=start, limit=limit)
    fake = FakeAllocator(cap)
    guessed = capacity.largest_fitting(fake, start=start, limit=limit, guess=guess)
    assert (guessed.max_fitting, guessed.hit_limit) == (plain.max_fitting, plain.hit_limit)
    assert tuple(zip(fake.calls, (n <= cap for n in fake.calls))) == guessed.probes
    assert len(fake.calls) <= 2 * (abs(guess - cap).bit_length() + 2) + 1  # logarithmic in the guess's error


def test_a_close_guess_probes_near_the_capacity_only():
    fake = FakeAllocator(21)
    assert capacity.largest_fitting(fake, limit=1024, guess=20).max_fitting == 21
    assert fake.calls == [20, 21, 23, 22]


def test_limit_and_first_failure():
    assert capacity.largest_fitting(FakeAllocator(10), limit=8).hit_limit
    assert capacity.largest_fitting(FakeAllocator(10), limit=8).max_fitting == 8
    assert capacity.largest_fitting(FakeAllocator(0)).max_fitting == 0
    with pytest.raises(ValueError, match="start"):
        capacity.largest_fitting(FakeAllocator(1), start=0)


def test_model_breakdown_by_hand():
    cfg = DecoderConfig(layers=2, hidden=8, heads=1, seq_len=4, batch=1, mode="forward")
    peak = capacity.predicted_peak_bytes(cfg)
    assert peak.weights == cfg.params * 4 + 2 * 16  # parameters + two 4x4 boolean masks
    assert peak.inputs == 4 * 8 * 4
    train = capacity.predicted_peak_bytes(dataclasses.replace(cfg, mode="train"))
    assert train.optimizer_state == 2 * cfg.params * 4
    assert train.total > peak.total


@settings(max_examples=25, deadline=None)
@given(hidden=st.sampled_from([64, 128, 256]), budget_mib=st.integers(8, 512))
def test_modeled_max_layers_is_the_largest_fitting(hidden, budget_mib):
    cfg = DecoderConfig(layers=1, hidden=hidden, heads=hidden // 64, mode="train")
    budget = budget_mib * 2**20
    n = capacity.predicted_max_layers(cfg, budget)
    if n:
        assert capacity.predicted_peak_bytes(dataclasses.replace(cfg, layers=n)).total <= budget
    assert capacity.predicted_peak_bytes(dataclasses.replace(cfg, layers=n + 1)).total > budget


@pytest.mark.parametrize(
    "cfg",
    [
        DecoderConfig(layers=4, hidden=128, heads=2, mode="train"),
        DecoderConfig(layers=2, hidden=64, heads=1, seq_len=256, mode="train"),
        DecoderConfig(layers=3, hidden=128, heads=2, seq_len=64, batch=2, mode="forward"),
    ],
    ids=lambda c: c.id,
)
def test_memory_model_agrees_with_the_tracker(cfg):
    import torch

    from pytest_genai.dabench import model
    from pytest_genai.runtime.memtrack import make_tracker

    tracker = make_tracker()
    with tracker:
        stack = model.build_stack(cfg, torch.device("cpu"))
        x = model.make_input(cfg, torch.device("cpu"))
        step = model.make_step(cfg, stack, x)
        step()
        step()
    modeled = capacity.predicted_peak_bytes(cfg).total
    assert 0.85 <= modeled / tracker.peak_bytes <= 1.15, (modeled, tracker.peak_bytes)


def test_real_search_under_a_budget_matches_the_model():
    """The CPU probe (tracker with a budget standing in for the device memory) against the memory model."""
    from pytest_genai.dabench.fit import probe
    from pytest_genai.devices.device import Device

    cpu = Device(kind="cpu", index=0, name="cpu", generation="cpu")
    cfg = DecoderConfig(layers=1, hidden=64, heads=1, seq_len=64, mode="train")
    budget = 4 * 2**20
    found = capacity.largest_fitting(lambda n: probe(cfg, n, cpu, budget).ok, limit=256)
    modeled = capacity.predicted_max_layers(cfg, budget)
    assert found.max_fitting >= 2 and not found.hit_limit
    assert abs(modeled - found.max_fitting) <= max(1, round(0.15 * found.max_fitting)), (modeled, found)
    assert probe(cfg, found.max_fitting, cpu, budget).peak_bytes <= budget
    assert probe(cfg, found.max_fitting + 1, cpu, budget).ok is False
