"""Synchronized, warmed-up timings with medians, the timer's own overhead, and the step arithmetic of distributed
runs (the slowest rank per step, the median after warm-up).

Every timed region is ``sync(); t0 = clock(); work(); sync(); t1 = clock()``: the device's queue is drained before
the clock is read at both ends, so asynchronous devices (CUDA, HPU) are timed for the work itself, not for its
launch. On the CPU ``sync`` is a no-op and the region's cost is the clock call itself, which
:func:`timer_overhead_s` measures and reports.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pytest_genai.runtime.rounds import RoundsOutcome, RoundsPolicy

Clock = Callable[[], float]
T = TypeVar("T")


def _noop() -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Timing:
    """Per-repeat seconds of one timed callable."""

    samples: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.samples:
            raise ValueError("Timing needs at least one sample")

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    @property
    def min_s(self) -> float:
        return min(self.samples)


def timed(fn: Callable[[], T], *, sync: Callable[[], None] | None = None, clock: Clock = time.perf_counter
          ) -> tuple[float, T]:
    """``(seconds, fn())`` of one call between two ``sync`` + clock reads (a training step that returns its loss)."""
    do_sync = sync or _noop
    do_sync()
    t0 = clock()
    out = fn()
    do_sync()
    return clock() - t0, out


def time_callable(
    fn: Callable[[], object],
    *,
    sync: Callable[[], None] | None = None,
    warmup: int = 1,
    repeats: int = 5,
    clock: Clock = time.perf_counter,
) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times each between two ``sync`` + clock reads.

    ``sync=None`` means no synchronization (only correct on the CPU; the CUDA timing test uses it to show the
    difference).
    """
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    do_sync = sync or _noop
    for _ in range(warmup):
        fn()
    do_sync()
    samples = []
    for _ in range(repeats):
        do_sync()
        t0 = clock()
        fn()
        do_sync()
        samples.append(clock() - t0)
    return Timing(tuple(samples))


#: Untimed calls before a CUDA step is timed with events: the first calls pay cuBLAS handles, allocator growth and
#: kernel selection, and a small step's first few rounds run while the GPU clocks up from idle.
EVENT_WARMUP = 5


def time_cuda_events(
    fn: Callable[[], object],
    *,
    index: int = 0,
    warmup: int = EVENT_WARMUP,
    repeats: int = 5,
    event: Callable[[], object] | None = None,
    synchronize: Callable[[int], None] | None = None,
) -> Timing:
    """Seconds of ``fn`` on a CUDA device from events recorded around it on the stream, after ``warmup`` untimed
    calls: ``synchronize(); start.record(); fn(); end.record(); end.synchronize()``. The events time the queued work
    itself, so a small step is not read as its launch; ``event`` / ``synchronize`` default to ``torch.cuda``'s (a
    test passes stand-ins)."""
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    if event is None or synchronize is None:
        import torch

        event = event or (lambda: torch.cuda.Event(enable_timing=True))
        synchronize = synchronize or torch.cuda.synchronize
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start, end = event(), event()
        synchronize(index)  # nothing of the warm-up or the last round is still queued before the start event
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)  # milliseconds -> seconds
    return Timing(tuple(samples))


def time_each(
    fns: Sequence[Callable[[], object]],
    *,
    sync: Callable[[], None] | None = None,
    warmup: int = 1,
    repeats: int = 5,
    clock: Clock = time.perf_counter,
    min_sample_s: float = 0.0,
    same_calls: bool = False,
) -> list[Timing]:
    """Timings of several callables, interleaved round by round so that a slow spell of a shared machine affects
    all of them alike (used for per-layer loads).

    ``min_sample_s`` > 0 makes each sample long enough for the clock: a callable faster than that is called
    ``ceil(min_sample_s / its warm-up time)`` times per sample and the sample is the mean per call.
    ``same_calls``: every callable gets the largest of those counts, for callables meant to be compared as equals
    (identical layers): the first call of a sample runs on colder caches, and a callable given fewer calls because
    its one warm-up call caught a slow spell would carry more of that cold call in every sample.
    """
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    do_sync = sync or _noop
    calls = [1] * len(fns)
    for _ in range(max(warmup, 1 if min_sample_s > 0 else 0)):
        for i, fn in enumerate(fns):
            do_sync()
            t0 = clock()
            fn()
            do_sync()
            elapsed = clock() - t0
            if min_sample_s > 0:
                calls[i] = max(1, math.ceil(min_sample_s / elapsed)) if elapsed > 0 else calls[i] * 10
    if same_calls:
        calls = [max(calls)] * len(fns)
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            do_sync()
            t0 = clock()
            for _ in range(calls[i]):
                fn()
            do_sync()
            samples[i].append((clock() - t0) / calls[i])
    return [Timing(tuple(s)) for s in samples]


def paired_rounds(
    first: Callable[[], object],
    second: Callable[[], object],
    *,
    rounds: int,
    clock: Clock = time.perf_counter,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Seconds of each of two callables in every round, ``(first's, second's)``, run back to back with the order
    alternating (first-second, second-first, ...).

    A slow spell of a shared machine then falls on both sides of a round alike, and going first or second favours
    neither: the per-round ratio cancels both, and :func:`pytest_genai.stats.median_interval` judges it.
    Each callable is one whole timed block (e.g. N steps); warm both up before calling this.
    """
    first_s, second_s, _ = paired_rounds_until(first, second, rounds=rounds, clock=clock)
    return first_s, second_s


def paired_rounds_until(
    first: Callable[[], object],
    second: Callable[[], object],
    *,
    rounds: int,
    policy: "RoundsPolicy | None" = None,
    decided: Callable[[tuple[float, ...], tuple[float, ...]], bool] | None = None,
    clock: Clock = time.perf_counter,
) -> tuple[tuple[float, ...], tuple[float, ...], "RoundsOutcome"]:
    """:func:`paired_rounds`, then under an ``auto`` policy (:mod:`pytest_genai.runtime.rounds`) two rounds at a
    time (both orders) while ``decided(first_s, second_s)`` is false and the budget allows; also returns what the
    loop did."""
    from pytest_genai.runtime.rounds import run_rounds

    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ValueError(f"paired_rounds needs rounds >= 1, got {rounds!r}")
    seconds: tuple[list[float], list[float]] = ([], [])

    def one(r: int) -> None:
        for side in ((0, 1) if r % 2 == 0 else (1, 0)):
            fn = first if side == 0 else second
            t0 = clock()
            fn()
            seconds[side].append(clock() - t0)

    test = None if decided is None else (lambda: decided(tuple(seconds[0]), tuple(seconds[1])))
    outcome = run_rounds(one, rounds, policy, test, cycle=2, clock=clock)
    return tuple(seconds[0]), tuple(seconds[1]), outcome


def timer_overhead_s(
    *, sync: Callable[[], None] | None = None, repeats: int = 1001, clock: Clock = time.perf_counter
) -> float:
    """Median seconds of an empty timed region (sync + two clock reads): the floor under every measurement."""
    return time_callable(_noop, sync=sync, warmup=10, repeats=repeats, clock=clock).median_s


@dataclasses.dataclass(frozen=True)
class CpuTimes:
    """Wall and process-CPU seconds over one timed region."""

    wall_s: float
    cpu_s: float


def cpu_times(fn: Callable[[], object], *, min_wall_s: float = 0.2, max_calls: int = 1000) -> CpuTimes:
    """Wall time and process CPU time (all threads) of back-to-back calls of ``fn`` until ``min_wall_s`` has
    passed (at least one call, at most ``max_calls``), so that the ratio is not dominated by clock granularity."""
    if min_wall_s < 0 or max_calls < 1:
        raise ValueError(f"need min_wall_s >= 0 and max_calls >= 1, got {min_wall_s}, {max_calls}")
    c0, t0 = time.process_time(), time.perf_counter()
    calls = 0
    while calls < max_calls:
        fn()
        calls += 1
        if time.perf_counter() - t0 >= min_wall_s:
            break
    return CpuTimes(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)


def slowest_rank_steps(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """Per step, the slowest rank's seconds (ranks x steps in, steps out): every rank waits for it at the next
    collective, so it is the job's step time."""
    lengths = {len(r) for r in per_rank}
    if not per_rank or len(lengths) != 1 or 0 in lengths:
        raise ValueError(f"every rank must report the same non-zero number of steps, got {sorted(lengths)}")
    return [max(column) for column in zip(*per_rank)]


def after_warmup(values: Sequence[float], warmup: int) -> list[float]:
    """``values`` without the first ``warmup`` (untimed) steps; an error when none are left."""
    timed = list(values)[warmup:]
    if not timed:
        raise ValueError(f"no timed steps: {len(values)} steps with warmup={warmup}; raise repeats")
    return timed


def median_after(values: Sequence[float], warmup: int) -> float:
    """Median of the steps after the first ``warmup``."""
    return float(statistics.median(after_warmup(values, warmup)))
