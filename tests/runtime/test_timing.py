"""Timing: synchronization order proven with a recording fake device; the timer's overhead measured; on CUDA
(only where a GPU is present) timing without a synchronize measures the launch, not the work."""
import time

import pytest

from pytest_genai.runtime.timing import (Timing, cpu_times, paired_rounds, time_callable, time_each,
                                         timer_overhead_s)


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.now = 0.0

    def sync(self) -> None:
        self.events.append("sync")

    def clock(self) -> float:
        self.events.append("clock")
        self.now += 1.0
        return self.now

    def work(self) -> None:
        self.events.append("work")


def test_clock_is_read_only_after_a_synchronize():
    rec = Recorder()
    timing = time_callable(rec.work, sync=rec.sync, clock=rec.clock, warmup=1, repeats=2)
    assert rec.events == ["work", "sync"] + ["sync", "clock", "work", "sync", "clock"] * 2
    assert timing.samples == (1.0, 1.0)


def test_time_each_interleaves_rounds():
    order: list[str] = []
    fns = [lambda: order.append("a"), lambda: order.append("b")]
    timings = time_each(fns, warmup=1, repeats=3)
    assert order == ["a", "b"] * 4
    assert len(timings) == 2 and all(len(t.samples) == 3 for t in timings)


def test_paired_rounds_alternate_the_order_and_keep_each_side_its_own_seconds():
    order: list[str] = []
    now = [0.0]

    def clock() -> float:
        return now[0]

    def side(name: str, seconds: float):
        def run() -> None:
            order.append(name)
            now[0] += seconds
        return run

    a, b = paired_rounds(side("a", 1.0), side("b", 3.0), rounds=4, clock=clock)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert a == (1.0,) * 4 and b == (3.0,) * 4
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="rounds"):
            paired_rounds(lambda: None, lambda: None, rounds=bad)


def test_median_and_validation():
    assert Timing((3.0, 1.0, 2.0)).median_s == 2.0
    with pytest.raises(ValueError, match="at least one sample"):
        Timing(())
    with pytest.raises(ValueError, match="repeats"):
        time_callable(lambda: None, repeats=0)


def test_timer_overhead_is_measured_and_small():
    overhead = timer_overhead_s(repeats=201)
    assert 0 < overhead < 1e-4  # perf_counter pairs cost well under 100 us on any machine we run on


def test_cpu_times_cover_the_requested_wall_time():
    def spin() -> None:
        end = time.perf_counter() + 0.005
        while time.perf_counter() < end:
            pass

    ct = cpu_times(spin, min_wall_s=0.05)
    assert ct.wall_s >= 0.05
    assert 0 < ct.cpu_s <= ct.wall_s * 2 + 0.01  # one busy thread (+ interpreter helpers)


def test_unsynchronized_cuda_timing_differs():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: run on a GPU node to check that synchronization changes CUDA timings")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    work = lambda: [a @ a for _ in range(8)]  # noqa: E731
    synced = time_callable(work, sync=torch.cuda.synchronize, warmup=2, repeats=5).median_s
    torch.cuda.synchronize()
    unsynced = time_callable(work, sync=None, warmup=0, repeats=1).median_s
    torch.cuda.synchronize()
    # 8 matmuls of 1.1 TFLOP each take milliseconds; queuing them takes microseconds.
    assert unsynced < 0.5 * synced, (unsynced, synced)


def test_short_work_is_repeated_within_a_sample():
    rec = Recorder()  # its clock advances 1 s per read, so the warm-up call "takes" 1 s
    calls = []
    timings = time_each([lambda: calls.append(1)], clock=rec.clock, warmup=1, repeats=2, min_sample_s=3.5)
    assert len(calls) == 1 + 2 * 4  # warm-up, then ceil(3.5 / 1) = 4 calls per sample
    assert timings[0].samples == (0.25, 0.25)  # one clock step spread over 4 calls


def test_same_calls_gives_every_callable_the_largest_call_count():
    # each callable sets how far the clock moves at its next read: a's warm-up "takes" 2 s, b's 0.5 s
    step = {"dt": 1.0}
    now = [0.0]

    def clock() -> float:
        now[0] += step["dt"]
        return now[0]

    calls = {"a": 0, "b": 0}

    def make(name, dt):
        def fn():
            calls[name] += 1
            step["dt"] = dt
        return fn

    fns = [make("a", 2.0), make("b", 0.5)]
    time_each(fns, clock=clock, warmup=1, repeats=2, min_sample_s=3.5)
    assert calls == {"a": 1 + 2 * 2, "b": 1 + 2 * 7}  # ceil(3.5 / 2) = 2 and ceil(3.5 / 0.5) = 7 calls a sample
    calls.update(a=0, b=0)
    time_each(fns, clock=clock, warmup=1, repeats=2, min_sample_s=3.5, same_calls=True)
    assert calls == {"a": 1 + 2 * 7, "b": 1 + 2 * 7}


def test_slowest_rank_per_step_and_median_after_warmup():
    from pytest_genai.runtime.timing import after_warmup, median_after, slowest_rank_steps

    assert slowest_rank_steps([[1.0, 2.0, 3.0], [1.5, 1.0, 4.0]]) == [1.5, 2.0, 4.0]
    assert after_warmup([9.0, 1.0, 2.0], 1) == [1.0, 2.0]
    assert median_after([9.0, 9.0, 1.0, 2.0, 3.0], 2) == 2.0
    with pytest.raises(ValueError, match="same non-zero number of steps"):
        slowest_rank_steps([[1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="no timed steps"):
        median_after([1.0, 2.0], 2)


def test_timed_syncs_around_one_call_and_returns_its_result():
    from pytest_genai.runtime.timing import timed

    rec = Recorder()
    seconds, out = timed(lambda: rec.events.append("work") or 7, sync=rec.sync, clock=rec.clock)
    assert out == 7 and seconds == 1.0
    assert rec.events == ["sync", "clock", "work", "sync", "clock"]
