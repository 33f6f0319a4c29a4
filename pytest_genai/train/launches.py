"""Comparisons across launches: each side of a ratio launched several times, interleaved, judged over launches.

Two configurations measured in separate ``torchrun`` jobs differ by more than their steps show: a launch's median
step moves with the load, placement and allocator state of that launch (docs/finetune.md). So each side runs
``per_side`` jobs in a
counterbalanced interleave (run, baseline, baseline, run, run, baseline, ...: a load that drifts steadily during the
jobs moves both sides alike), and the ratio's interval is
:func:`pytest_genai.stats.hierarchical_ratio_interval`, a two-stage bootstrap over the jobs and then their
steps, whose level is capped by the job count: fewer than :data:`MIN_JUDGING` jobs a side read inconclusive.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_genai.stats import Interval, hierarchical_ratio_interval, median_coverage

#: Jobs a side for an interval the verdict may use: the two-stage bootstrap's level is at most ``1 - 2^(1-jobs)``
#: (3 jobs: 75%, 4: 88%, 5: 94%), and ``claims.check.MIN_LEVEL`` (90%) needs 5.
MIN_JUDGING = 5

T = TypeVar("T")


@dataclass(frozen=True)
class LaunchPlan:
    """How many jobs each side of a cross-launch comparison runs (``per_side`` >= 2: one job a side shows nothing
    of the spread between jobs)."""

    per_side: int

    def __post_init__(self) -> None:
        if not isinstance(self.per_side, int) or isinstance(self.per_side, bool) or self.per_side < 2:
            raise ValueError(f"LaunchPlan.per_side={self.per_side!r} must be an int >= 2: one launch a side cannot "
                             "show the variance between launches")

    @property
    def judges(self) -> bool:
        """Whether the comparison's interval can reach the level a verdict needs (else it reads inconclusive)."""
        return median_coverage(self.per_side, 1) >= _min_level()

    def order(self) -> tuple[str, ...]:
        """Launch order, ``"run"`` (the configuration under test) first: run, base, base, run, run, base, ..."""
        pairs = [("run", "base") if i % 2 == 0 else ("base", "run") for i in range(self.per_side)]
        return tuple(side for pair in pairs for side in pair)


def _min_level() -> float:
    from pytest_genai.claims.check import MIN_LEVEL

    return MIN_LEVEL


#: Per ``--genai-scale``. ``small`` and ``full`` judge the claims: 5 jobs a side. ``tiny`` (CI, 2 CPU cores) runs
#: 2 a side: the ratio and its interval over both launches are recorded, the verdict reads inconclusive (the
#: interval's level is 50%), so CI never passes or fails a cross-launch claim on too few launches; 5 a side would
#: add minutes to CI.
LAUNCH_PLANS = {"tiny": LaunchPlan(2), "small": LaunchPlan(MIN_JUDGING), "full": LaunchPlan(MIN_JUDGING)}


def launch_plan(scale: str) -> LaunchPlan:
    if scale not in LAUNCH_PLANS:
        raise ValueError(f"scale={scale!r} has no launch plan; use one of {sorted(LAUNCH_PLANS)} (--genai-scale)")
    return LAUNCH_PLANS[scale]


_NOT_LAUNCHED = object()


def interleave(plan: LaunchPlan, launch_run: Callable[[], T], launch_base: Callable[[], T],
               first_run: Any = _NOT_LAUNCHED) -> tuple[list[T], list[T]]:
    """Launch both sides in ``plan.order()``; (runs, bases), each in launch order. ``first_run``: what the first run
    job returned, already launched by the caller (a benchmark timing its own job; None on the nodes other than
    node 0 is a result too)."""
    given = first_run is not _NOT_LAUNCHED
    runs: list[T] = [first_run] if given else []
    bases: list[T] = []
    for i, side in enumerate(plan.order()):
        if side == "base":
            bases.append(launch_base())
        elif not (i == 0 and given):
            runs.append(launch_run())
    return runs, bases


@dataclass(frozen=True)
class LaunchComparison:
    """``slow / fast`` over launches: the ratio of the sides' mean job medians (the statistic the interval is for),
    its interval, and each job's median in launch order."""

    ratio: float
    interval: Interval
    slow_medians: tuple[float, ...]
    fast_medians: tuple[float, ...]


def compare_launches(slow_jobs: Sequence[Sequence[float]], fast_jobs: Sequence[Sequence[float]]) -> LaunchComparison:
    """The step-time ratio of two configurations with the same global batch (so the tokens/s ratio of the fast side
    over the slow one): each side a list of jobs, each job its timed steps (pure)."""
    if len(slow_jobs) < 2 or len(fast_jobs) < 2:
        raise ValueError(f"compare_launches needs at least 2 jobs a side, got {len(slow_jobs)} and {len(fast_jobs)}; "
                         "launch each side several times (LaunchPlan)")
    slow = tuple(statistics.median(j) for j in slow_jobs)
    fast = tuple(statistics.median(j) for j in fast_jobs)
    interval = hierarchical_ratio_interval([list(j) for j in slow_jobs], [list(j) for j in fast_jobs])
    return LaunchComparison(statistics.fmean(slow) / statistics.fmean(fast), interval, slow, fast)
