"""How many timed rounds a benchmark takes: a fixed number, or ``auto`` — more interleaved rounds until the
interval decides, within a time budget.

A timing claim or a gate threshold is judged on the interval of its rounds; with a fixed count, a benchmark whose
interval still straddles the bound reads ``inconclusive`` however cheap another round would have been, and one that
decided after five rounds spends the rest for nothing. ``--genai-rounds auto`` keeps the benchmark's own rounds as
the minimum, then adds rounds (in whole interleaving cycles, so no side goes first more often) while the caller's
``decided`` test says no and the next cycle fits the ``--genai-time-budget``; :class:`RoundsOutcome` says how many
rounds were taken and why they stopped, and the recorder writes it into the run's JSON (``rounds``).

Stopping as soon as the interval decides looks at the data between rounds, which makes a decision at the nominal
level slightly more likely than the level says; the intervals stay those of the rounds taken (none is widened), and
a cap (:data:`MAX_ROUNDS`) bounds how often the test is repeated.
"""
from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable
from typing import Any

FIXED, AUTO = "fixed", "auto"
#: Why the rounds stopped: the benchmark's own count (``fixed``), every interval decided, the next cycle would
#: pass the time budget, or the cap.
DECIDED, BUDGET, CAPPED = "decided", "time_budget", "max_rounds"
#: ``auto`` never takes more rounds than this: the median's order-statistic interval gains little past it, and a
#: benchmark that cannot decide in 200 rounds is one a bound sits on, not one short of rounds.
MAX_ROUNDS = 200
DEFAULT_BUDGET_S = 60.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$")
_UNIT_S = {None: 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}


@dataclasses.dataclass(frozen=True)
class RoundsPolicy:
    """``mode``: ``fixed`` (each benchmark's own count) or ``auto``; ``budget_s``: the most seconds ``auto`` spends
    on rounds past the benchmark's own, per benchmark; ``max_rounds``: the cap on all rounds."""

    mode: str = FIXED
    budget_s: float = DEFAULT_BUDGET_S
    max_rounds: int = MAX_ROUNDS

    def __post_init__(self) -> None:
        if self.mode not in (FIXED, AUTO):
            raise ValueError(f"rounds mode must be {FIXED!r} or {AUTO!r}, got {self.mode!r}")
        if not (math.isfinite(self.budget_s) and self.budget_s >= 0):
            raise ValueError(f"the time budget must be a finite number of seconds >= 0, got {self.budget_s!r}")
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds!r}")


@dataclasses.dataclass(frozen=True)
class RoundsOutcome:
    """What a timing loop did: ``rounds`` taken (``planned``: the benchmark's own count), why it stopped, and the
    wall seconds of all rounds (``seconds_measured``)."""

    mode: str
    planned: int
    rounds: int
    stopped: str
    seconds_measured: float
    budget_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.mode == FIXED:
            out.pop("budget_s")
        return out


def parse_rounds(text: str) -> str:
    """``--genai-rounds``: ``auto`` (more rounds until the interval decides, within ``--genai-time-budget``) or
    ``fixed`` (each benchmark's own count, the default)."""
    value = str(text).strip().lower()
    if value not in (FIXED, AUTO):
        raise ValueError(f"{text!r} is not a rounds mode; write auto (add rounds until the interval decides, within "
                         "--genai-time-budget) or fixed (each benchmark's own count)")
    return value


def parse_duration(text: str) -> float:
    """``--genai-time-budget``: seconds, as ``60``, ``60s``, ``1.5m``, ``500ms`` or ``1h``; finite and >= 0."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not a duration; write e.g. 60s, 2m or 90 (seconds)")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def run_rounds(one_round: Callable[[int], object], planned: int, policy: RoundsPolicy | None = None,
               decided: Callable[[], bool] | None = None, *, cycle: int = 1,
               clock: Callable[[], float] = time.perf_counter) -> RoundsOutcome:
    """Call ``one_round(i)`` for ``i = 0 .. planned - 1``; under an ``auto`` policy, then ``cycle`` more at a time
    while ``decided()`` is false, the next cycle (at the mean round time so far) fits the budget, and the cap
    allows it. ``cycle``: the rounds of one interleaving cycle (2 for an order that alternates), so extra rounds
    keep every side first equally often. Without ``decided``, ``auto`` takes the planned rounds only."""
    if not isinstance(planned, int) or isinstance(planned, bool) or planned < 1:
        raise ValueError(f"need planned rounds >= 1, got {planned!r}")
    if cycle < 1:
        raise ValueError(f"need cycle >= 1, got {cycle!r}")
    policy = policy or RoundsPolicy()
    start = clock()
    n = 0
    while n < planned:
        one_round(n)
        n += 1
    base_s = clock() - start
    if policy.mode == FIXED:
        return RoundsOutcome(FIXED, planned, n, FIXED, base_s)
    stopped = DECIDED
    while True:
        if decided is None or decided():
            stopped = DECIDED
            break
        spent = clock() - start
        if n + cycle > policy.max_rounds:
            stopped = CAPPED
            break
        # the budget counts rounds past the planned ones: the benchmark's own rounds are always run
        if (spent - base_s) + cycle * spent / n > policy.budget_s:
            stopped = BUDGET
            break
        for _ in range(cycle):
            one_round(n)
            n += 1
    return RoundsOutcome(AUTO, planned, n, stopped, clock() - start, policy.budget_s)
