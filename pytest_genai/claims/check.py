"""Checking a measured value against a claim: a pure function returning a :class:`Verdict`."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from pytest_genai.claims.model import Claim

PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "not_applicable"


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

    @property
    def failed(self) -> bool:
        return self.verdict == FAIL

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _paper_suffix(claim: Claim) -> str:
    detail = claim.paper_text or (f"paper value {claim.paper_value:g}" if claim.paper_value is not None else "")
    return f" ({claim.source}: {detail})" if detail else f" ({claim.source})"


def check_value(claim: Claim, measured: float) -> Verdict:
    """Compare ``measured`` with the claim's bounds (inclusive). Non-finite values fail."""
    def verdict(kind: str, message: str) -> Verdict:
        value = float(measured) if isinstance(measured, (int, float)) else None
        return Verdict(claim.id, claim.metric, value, claim.min, claim.max, claim.paper_value, kind, message)

    head = f"claim {claim.id}: measured "
    if isinstance(measured, bool) or not isinstance(measured, (int, float)):
        return verdict(FAIL, f"{head}{measured!r} is not a number{_paper_suffix(claim)}")
    if not math.isfinite(measured):
        return verdict(FAIL, f"{head}{measured} is not finite{_paper_suffix(claim)}")
    shown = f"{measured:.4g}"
    if claim.min is not None and measured < claim.min:
        return verdict(FAIL, f"{head}{shown} < min {claim.min:.4g}{_paper_suffix(claim)}")
    if claim.max is not None and measured > claim.max:
        return verdict(FAIL, f"{head}{shown} > max {claim.max:.4g}{_paper_suffix(claim)}")
    return verdict(PASS, f"{head}{shown} within {claim.bound_text()}{_paper_suffix(claim)}")


def not_applicable(claim: Claim, why: str) -> Verdict:
    return Verdict(claim.id, claim.metric, None, claim.min, claim.max, claim.paper_value, NOT_APPLICABLE,
                   f"claim {claim.id}: not applicable ({why})")
