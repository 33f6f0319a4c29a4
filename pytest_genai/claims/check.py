"""Checking a measured value against a claim: a pure function returning a :class:`Verdict`.

A deterministic number is judged on its value; a timing number (``Claim.timing``) on a confidence interval over
rounds: ``pass`` inside the bounds, ``fail`` wholly outside, ``inconclusive`` when noise could put it on either side.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from pytest_genai.claims.model import Claim
from pytest_genai.stats import Interval, examples_to_decide, paired_counts

PASS, FAIL, INCONCLUSIVE, NOT_APPLICABLE = "pass", "fail", "inconclusive", "not_applicable"
#: Past this CPU-stall share a timing verdict reads inconclusive: the interval covers noise between rounds, not a load.
CONTENDED_SHARE = 0.3
#: An interval with lower coverage decides nothing (the median's interval reaches 94% only from 5 rounds).
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


def _verdict(claim: Claim, measured: float | None, kind: str, message: str,
             interval: Interval | None = None) -> Verdict:
    return Verdict(claim.id, claim.metric, measured, claim.min, claim.max,
                   claim.paper_value if claim.basis == "paper" else None, kind, message, claim.basis,
                   None if interval is None else interval.to_json())


def _outside(claim: Claim, x: float) -> str | None:
    """Which bound ``x`` is past (``< min 0.9``), the same text for any ``x`` past it; None within the bounds."""
    if claim.min is not None and x < claim.min:
        return f"< min {claim.min:.4g}"
    if claim.max is not None and x > claim.max:
        return f"> max {claim.max:.4g}"
    return None


def check_value(claim: Claim, measured: float, interval: Interval | None = None,
                stall_share: float | None = None) -> Verdict:
    """Compare ``measured`` (and its ``interval`` over rounds) with the claim's inclusive bounds; ``stall_share``: the
    share of the measurement a task waited for a CPU (None: unknown)."""
    number = isinstance(measured, (int, float)) and not isinstance(measured, bool)
    detail = claim.paper_text or (f"paper value {claim.paper_value:g}" if claim.paper_value is not None else "")
    suffix = f" ({claim.source}: {detail})" if detail and claim.basis == "paper" else f" ({claim.source})"

    def verdict(kind: str, message: str) -> Verdict:
        return _verdict(claim, float(measured) if number else None, kind, message + suffix, interval)

    head, within = f"claim {claim.id}: measured ", f"within {claim.bound_text()}"
    if not number:
        return verdict(FAIL, f"{head}{measured!r} is not a number")
    if not math.isfinite(measured):
        return verdict(FAIL, f"{head}{measured} is not finite")
    shown = f"{measured:.4g}"
    point_out = _outside(claim, measured)
    if interval is None and claim.timing:
        return verdict(INCONCLUSIVE, f"{head}{shown} from one value; a timing claim needs several rounds to judge "
                                     f"noise against {claim.bound_text()}")
    if interval is None:
        return verdict(FAIL if point_out else PASS, f"{head}{shown} {point_out or within}")
    span = f"{head}{shown}, interval {interval.text()}"
    out = _outside(claim, interval.lo)
    if out != _outside(claim, interval.hi):  # the interval crosses a bound
        return verdict(INCONCLUSIVE, f"{span} straddles {claim.bound_text()}: noise could put it on either side"
                                     + _examples_hint(claim, interval))
    if interval.level < MIN_LEVEL:
        return verdict(INCONCLUSIVE, f"{span}: a {interval.level:.0%} interval (under {MIN_LEVEL:.0%}) is too "
                                     f"wide a net to judge {claim.bound_text()}; record 5 rounds or more")
    if point_out != out:
        # value and interval come from different statistics: either verdict would contradict one of them
        return verdict(INCONCLUSIVE, f"{span}: the value ({shown} {point_out or within}) and its interval disagree "
                                     f"about {claim.bound_text()}; record the value of the statistic the interval is "
                                     "for")
    if claim.timing and stall_share is not None and stall_share > CONTENDED_SHARE:
        return verdict(INCONCLUSIVE, f"{span} {out or within}, but a task waited for a CPU {stall_share:.0%} of the "
                                     f"measurement (over {CONTENDED_SHARE:.0%}): a contended machine can neither "
                                     "pass nor fail a timing claim")
    return verdict(FAIL if out else PASS, f"{span} {out or within}")


def _examples_hint(claim: Claim, interval: Interval) -> str:
    """For a paired accuracy drop: how many examples the same flip rates would need to decide (``--genai-limit``)."""
    counts = paired_counts(interval)
    if counts is None or interval.n < 1:
        return ""
    needed = examples_to_decide(*counts, interval.n, claim.min, claim.max, interval.level)
    rates = f"; at these flip rates ({counts[0]} to wrong, {counts[1]} to right of {interval.n})"
    if needed is None:
        return f"{rates} no example count up to a million decides it"
    return f"{rates} about {needed:,} examples would decide it (--genai-limit, or --genai-scale full)"


def contended_share(attachments: Mapping[str, Any] | None) -> float | None:
    """A benchmark's CPU-stall share (``cpu_contention`` attachment) past :data:`CONTENDED_SHARE`, else None."""
    reading = (attachments or {}).get("cpu_contention")
    share = reading.get("stall_share_measured") if isinstance(reading, Mapping) else None
    if isinstance(share, (int, float)) and not isinstance(share, bool) and share > CONTENDED_SHARE:
        return float(share)
    return None


def contention_note(shares: Mapping[str, float], benchmarks: int) -> str | None:
    """A run summary's line on its contended benchmarks (``shares``: name -> stall share), None when none was."""
    if not shares:
        return None
    lo, hi = min(shares.values()), max(shares.values())
    span = f"{lo:.0%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
    return (f"CPU contention: {len(shares)} of {benchmarks} benchmarks were measured while a task waited for a CPU "
            f"{span} of the time (over {CONTENDED_SHARE:.0%}; Linux PSI, attachment cpu_contention): their timing "
            "verdicts read inconclusive, and their times measure the load as much as the hardware; rerun on an "
            "idle machine")


def not_applicable(claim: Claim, why: str) -> Verdict:
    """The verdict of a claim out of scope for a measurement, and ``why``."""
    return _verdict(claim, None, NOT_APPLICABLE, f"claim {claim.id}: not applicable ({why})")
