"""The papers' generation claims judged on reference runs, by the gate's own code (:func:`report.gate.gate_runs`).

The older generation's reference run is the baseline, the newer one's the current run; every published row both have
is one pair, checked against the claim's bounds exactly as for two user runs.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Iterable, Sequence

from pytest_genai.reference.row import ReferenceRow
from pytest_genai.reference.runs import runs_by_generation


@dataclasses.dataclass(frozen=True)
class ClaimSummary:
    """One generation claim over every published row it applies to."""

    claim_id: str
    bounds: str
    paper_text: str
    checks: tuple  # report.gate.GenerationCheck, one per published row pair

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for check in self.checks:
            out[check.verdict] = out.get(check.verdict, 0) + 1
        return out

    @property
    def speedups(self) -> list[float]:
        return sorted(c.speedup for c in self.checks)

    def text(self) -> str:
        if not self.checks:
            return f"{self.claim_id}: no published row pair applies"
        s = self.speedups
        counts = ", ".join(f"{n} {v}" for v, n in sorted(self.counts.items()))
        return (f"{self.claim_id} (paper: {self.bounds}): {len(s)} published row pairs, speedup "
                f"{s[0]:.2f}-{s[-1]:.2f}x, median {statistics.median(s):.2f}x; {counts}")


def judge(rows: Iterable[ReferenceRow], claims: Sequence) -> list[ClaimSummary]:
    """Each generation claim of ``claims`` on the reference runs of ``rows``."""
    from pytest_genai.report.gate import gate_runs
    from pytest_genai.claims import default_metric_info
    from pytest_genai.report.thresholds import Thresholds

    runs = runs_by_generation(rows)
    info, _warning = default_metric_info()
    out = []
    for claim in claims:
        if claim.kind != "generation":
            continue
        checks = []
        for base_gen, base in runs.items():
            for cur_gen, cur in runs.items():
                if base_gen != cur_gen and claim.matches_generations(base_gen, cur_gen):
                    result = gate_runs(base, cur, info, Thresholds(), [claim])
                    checks.extend(c for c in result.generation_checks if c.claim_id == claim.id)
        out.append(ClaimSummary(claim.id, claim.bound_text(), claim.paper_text, tuple(checks)))
    return out


def reading(check: object) -> str:
    """Where one pair's published speedup lies against the paper's bounds (a point reading, not a verdict)."""
    lo, hi, s = getattr(check, "min"), getattr(check, "max"), getattr(check, "speedup")
    if lo is not None and s < lo:
        return "below the paper's range"
    if hi is not None and s > hi:
        return "above the paper's range"
    return "within the paper's range"


def table(summaries: Sequence[ClaimSummary], rows: Iterable[ReferenceRow] = ()) -> tuple[list[str], list[list[str]]]:
    """Headers and one row per published pair (given ``rows``, with the two numbers' lines in the source)."""
    from pytest_genai.reference.runs import benchmark_name

    lines = {(benchmark_name(r), r.generation): r.provenance.line for r in rows}
    headers = ["claim", "paper", "published row", "from", "to", "speedup", "reading", "gate verdict",
               "lines (from, to)"]
    out = []
    for summary in summaries:
        for c in summary.checks:
            where = f"{lines.get((c.benchmark, c.from_generation), '?')}, {lines.get((c.benchmark, c.to_generation), '?')}"
            out.append([summary.claim_id, summary.bounds, c.benchmark.split(":", 1)[-1].rstrip("]"),
                        f"{c.from_generation} {c.baseline:g}", f"{c.to_generation} {c.current:g}",
                        f"{c.speedup:.2f}x", reading(c), c.verdict, where])
    return headers, out
