"""Throughput metrics: examples and properties."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.runtime.timing import slowest_rank_steps
from pytest_genai.train import metrics

times = st.floats(1e-4, 100, allow_nan=False)


def test_examples():
    assert metrics.median_step_s([9.0, 9.0, 1.0, 2.0, 3.0], warmup=2) == 2.0
    assert metrics.tokens_per_s(8, 128, 0.5) == 2048.0
    assert metrics.samples_per_s(8, 0.5) == 16.0
    assert metrics.achieved_tflops(2e12, 0.5) == 4.0
    assert metrics.mfu(4.0, 10.0, 2) == 0.2
    assert metrics.speedup(3.0, 2.0) == 1.5
    assert metrics.loss_drop(4.0, 3.0) == 0.25


@pytest.mark.parametrize("call, message", [
    (lambda: metrics.median_step_s([1.0, 2.0], warmup=2), "no timed steps"),
    (lambda: slowest_rank_steps([[1.0], [1.0, 2.0]]), "same non-zero number of steps"),
    (lambda: slowest_rank_steps([]), "same non-zero number of steps"),
    (lambda: metrics.tokens_per_s(8, 128, 0.0), "step_s"),
    (lambda: metrics.mfu(1.0, 0.0, 1), "peak_tflops_per_device"),
    (lambda: metrics.mfu(1.0, 1.0, 0), "devices"),
    (lambda: metrics.speedup(math.nan, 1.0), "faster_candidate"),
])
def test_bad_inputs_name_themselves(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=25, deadline=None)
@given(per_rank=st.lists(st.lists(times, min_size=3, max_size=3), min_size=1, max_size=4))
def test_global_step_is_the_slowest_rank(per_rank):
    steps = slowest_rank_steps(per_rank)
    for i, t in enumerate(steps):
        assert t == max(r[i] for r in per_rank)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 512), seq=st.integers(1, 8192), step=times)
def test_throughput_properties(batch, seq, step):
    assert metrics.tokens_per_s(batch, seq, step) == pytest.approx(seq * metrics.samples_per_s(batch, step))
    assert metrics.tokens_per_s(batch, seq, step / 2) == pytest.approx(2 * metrics.tokens_per_s(batch, seq, step))


@settings(max_examples=25, deadline=None)
@given(a=times, b=times)
def test_speedup_is_antisymmetric(a, b):
    assert metrics.speedup(a, b) * metrics.speedup(b, a) == pytest.approx(1.0)
