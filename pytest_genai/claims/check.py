"""Checking a measured value against a claim: a pure function returning a :class:`Verdict`.

A deterministic number (perplexity, a compression ratio) is judged on its value. A number derived from measured
times (``Claim.timing``) is judged on a confidence interval over rounds (:mod:`pytest_genai.stats`): ``pass``
when the whole interval lies within the bounds, ``fail`` when it lies wholly outside, ``inconclusive`` when noise
could put it on either side — or when only one value was measured, which says nothing about noise, or too few rounds
for the interval to cover the value with at least :data:`MIN_LEVEL` confidence, or when the value itself lies on the
other side of a bound than its interval (the two then come from different statistics, and either verdict would
contradict one of them).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from pytest_genai.claims.model import Claim
from pytest_genai.stats import Interval

PASS, FAIL, INCONCLUSIVE, NOT_APPLICABLE = "pass", "fail", "inconclusive", "not_applicable"
VERDICTS = (PASS, FAIL, INCONCLUSIVE, NOT_APPLICABLE)
#: Above this share of the test with a task waiting for a CPU (:mod:`pytest_genai.runtime.pressure`), a timing
#: claim whose interval would decide it (pass or fail) reads ``inconclusive``: the interval covers noise between
#: rounds, not a load that shifts every round alike (and can as well favour one side of a ratio as the other). Measured on 2 vCPUs (2026-12-01), the benchmarks with
#: timing claims read 0.00-0.20 idle (the most: ZeRO-3's extra threads) and 0.47-0.87 beside two CPU burners.
CONTENDED_SHARE = 0.3
#: An interval that covers the true value less often than this decides nothing: the order-statistic interval of the
#: median spans every round up to 4 rounds, at 50% (2 rounds), 75% (3) or 88% (4) coverage, so two rounds that both
#: land on one side of a bound (even odds) would otherwise pass or fail it. 5 rounds give 94%.
MIN_LEVEL = 0.9


@dataclasses.dataclass(frozen=True)
class Verdict:
    id: str
    metric: str
    measured: float | None
    min: float | None
    max: float | None
    paper: float | None
    verdict: str
    message: str
    basis: str = "paper"
    interval: dict[str, Any] | None = None  # Interval.to_json() when judged on an interval

    @property
    def failed(self) -> bool:
        return self.verdict == FAIL

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _suffix(claim: Claim) -> str:
    if claim.basis != "paper":
        return f" ({claim.source})"
    detail = claim.paper_text or (f"paper value {claim.paper_value:g}" if claim.paper_value is not None else "")
    return f" ({claim.source}: {detail})" if detail else f" ({claim.source})"


def _outside(claim: Claim, x: float) -> str | None:
    if claim.min is not None and x < claim.min:
        return f"< min {claim.min:.4g}"
    if claim.max is not None and x > claim.max:
        return f"> max {claim.max:.4g}"
    return None


def check_value(claim: Claim, measured: float, interval: Interval | None = None,
                stall_share: float | None = None) -> Verdict:
    """Compare ``measured`` (and, for timing claims, its ``interval``) with the claim's inclusive bounds.

    ``stall_share``: how much of the measurement a task waited for a CPU (None: unknown). A timing claim that would
    pass or fail on a machine contended past :data:`CONTENDED_SHARE` reads ``inconclusive`` and says why.
    """
    def verdict(kind: str, message: str) -> Verdict:
        value = float(measured) if isinstance(measured, (int, float)) and not isinstance(measured, bool) else None
        return Verdict(claim.id, claim.metric, value, claim.min, claim.max,
                       claim.paper_value if claim.basis == "paper" else None, kind, message + _suffix(claim),
                       claim.basis, None if interval is None else interval.to_json())

    head = f"claim {claim.id}: measured "
    if isinstance(measured, bool) or not isinstance(measured, (int, float)):
        return verdict(FAIL, f"{head}{measured!r} is not a number")
    if not math.isfinite(measured):
        return verdict(FAIL, f"{head}{measured} is not finite")
    shown = f"{measured:.4g}"
    if interval is not None:
        span = f"{head}{shown}, interval {interval.text()}"
        lo_out, hi_out = _outside(claim, interval.lo), _outside(claim, interval.hi)
        decides = (lo_out is None and hi_out is None) or bool(lo_out and hi_out and lo_out[0] == hi_out[0])
        if decides and interval.level < MIN_LEVEL:
            return verdict(INCONCLUSIVE, f"{span}: a {interval.level:.0%} interval (under {MIN_LEVEL:.0%}) is too "
                                         f"wide a net to judge {claim.bound_text()}; record 5 rounds or more")
        point_out = _outside(claim, measured)
        if decides and (point_out and point_out[0]) != (lo_out and lo_out[0]):
            # the recorded value and its interval come from different statistics (e.g. a mean ratio and a median
            # ratio's interval) and disagree about the bound: a verdict either way would contradict one of them
            where = f"{shown} {point_out}" if point_out else f"{shown} within {claim.bound_text()}"
            return verdict(INCONCLUSIVE, f"{span}: the value ({where}) and its interval disagree about "
                                         f"{claim.bound_text()}; record the value of the statistic the interval is "
                                         "for")
        contended = claim.timing and stall_share is not None and stall_share > CONTENDED_SHARE
        if decides and contended:
            where = (lo_out if lo_out and lo_out[0] == '>' else hi_out) if lo_out else f"within {claim.bound_text()}"
            return verdict(INCONCLUSIVE, f"{span} {where}, but a task waited for a CPU {stall_share:.0%} of the "
                                         f"measurement (over {CONTENDED_SHARE:.0%}): a contended machine can neither "
                                         "pass nor fail a timing claim")
        if lo_out and hi_out and lo_out[0] == hi_out[0]:  # both ends past the same bound
            return verdict(FAIL, f"{span} {lo_out if lo_out[0] == '>' else hi_out}")
        if lo_out is None and hi_out is None:
            return verdict(PASS, f"{span} within {claim.bound_text()}")
        return verdict(INCONCLUSIVE, f"{span} straddles {claim.bound_text()}: noise could put it on either side"
                                     + _examples_hint(claim, interval))
    if claim.timing:
        return verdict(INCONCLUSIVE, f"{head}{shown} from one value; a timing claim needs several rounds to judge "
                                     f"noise against {claim.bound_text()}")
    outside = _outside(claim, measured)
    if outside:
        return verdict(FAIL, f"{head}{shown} {outside}")
    return verdict(PASS, f"{head}{shown} within {claim.bound_text()}")


def _examples_hint(claim: Claim, interval: Interval) -> str:
    """For a paired accuracy drop: how many examples the same flip rates would need to decide (``--genai-limit``)."""
    from pytest_genai.stats import examples_to_decide, paired_counts

    counts = paired_counts(interval)
    if counts is None or interval.n < 1:
        return ""
    needed = examples_to_decide(*counts, interval.n, claim.min, claim.max, interval.level)
    if needed is None:
        return (f"; at these flip rates ({counts[0]} to wrong, {counts[1]} to right of {interval.n}) no example count "
                "up to a million decides it")
    return (f"; at these flip rates ({counts[0]} to wrong, {counts[1]} to right of {interval.n}) about {needed:,} "
            "examples would decide it (--genai-limit, or --genai-scale full)")


def contended_share(attachments: Mapping[str, Any] | None) -> float | None:
    """A benchmark's CPU-stall share (its ``cpu_contention`` attachment) when past :data:`CONTENDED_SHARE`, else
    None (idle, or not measured: no PSI, or numbers read from another machine's files)."""
    reading = (attachments or {}).get("cpu_contention")
    share = reading.get("stall_share_measured") if isinstance(reading, Mapping) else None
    if isinstance(share, (int, float)) and not isinstance(share, bool) and share > CONTENDED_SHARE:
        return float(share)
    return None


def contention_note(shares: Mapping[str, float], benchmarks: int) -> str | None:
    """One line for a run's summary: how many of its ``benchmarks`` were measured contended (``shares``: name ->
    stall share past :data:`CONTENDED_SHARE`) and what that does to their verdicts; None when none was."""
    if not shares:
        return None
    lo, hi = min(shares.values()), max(shares.values())
    span = f"{lo:.0%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
    return (f"CPU contention: {len(shares)} of {benchmarks} benchmarks were measured while a task waited for a CPU "
            f"{span} of the time (over {CONTENDED_SHARE:.0%}; Linux PSI, attachment cpu_contention): their timing "
            "verdicts read inconclusive, and their times measure the load as much as the hardware; rerun on an "
            "idle machine")


def not_applicable(claim: Claim, why: str) -> Verdict:
    return Verdict(claim.id, claim.metric, None, claim.min, claim.max,
                   claim.paper_value if claim.basis == "paper" else None, NOT_APPLICABLE,
                   f"claim {claim.id}: not applicable ({why})", claim.basis)
