"""The regression gate (``pytest-genai gate``): pass/fail/undecided over a :mod:`.compare` comparison.

A pair across device generations is checked on its measured speedup against the claims' generation claim for it
(Gaudi → Gaudi2 2.5–3x), which replaces the metric's threshold where the claim's lower bound rules out a slowdown.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .compare import (
    INCONCLUSIVE, MISSING_CURRENT, NOT_FINITE, UNITS_DIFFER, Comparison, MetricComparison, PairComparison,
    compare_runs, fails,
)
from .deltas import speedup
from .matching import nearest_difference
from pytest_genai.results.errors import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from pytest_genai.results.registry import SPEEDUP_METRIC, THROUGHPUT_METRICS, MetricInfo
from pytest_genai.results.runs import BENCH_MEDIAN_METRIC, Record, Run
from pytest_genai.tables import format_number
from .thresholds import Thresholds

CLAIM_CHECKED = "see claim"


@dataclass(frozen=True)
class GenerationCheck:
    """A generation claim checked on one matched pair."""

    claim_id: str
    benchmark: str
    metric: str
    from_generation: str
    to_generation: str
    baseline: float | None
    current: float | None
    speedup: float
    min: float | None
    max: float | None
    paper: str
    verdict: str  # "pass" | "fail" | "inconclusive"
    message: str
    interval: dict | None = None  # the speedup's bootstrap interval, where both runs recorded the metric's rounds


@dataclass(frozen=True)
class Failure:
    benchmark: str
    metric: str
    reason: str
    device: str = ""  # the failing row's (``a100 → h100`` across generations): a benchmark may run on several


@dataclass(frozen=True)
class GateResult:
    comparison: Comparison
    generation_checks: tuple[GenerationCheck, ...]
    notes: tuple[str, ...]
    strict: bool
    allow_missing: bool = False
    strict_inconclusive: bool = False
    allow_undecided: bool = False

    @property
    def undecided(self) -> list[tuple[PairComparison, MetricComparison]]:
        """Inconclusive rows whose change is past the threshold: neither passed nor failed (exit 3)."""
        return [(pc, m) for pc, m in self.inconclusive if m.undecided]

    @property
    def exit_code(self) -> int:
        """1 on a failure, else 3 where a row is undecided (unless ``allow_undecided``), else 0."""
        if self.failures:
            return EXIT_REGRESSION
        return EXIT_UNDECIDED if self.undecided and not self.allow_undecided else EXIT_OK

    @property
    def failures(self) -> tuple[Failure, ...]:
        out = [Failure(pc.pair.current.label, mc.metric, _reason(mc), _device_text(pc.pair.baseline, pc.pair.current))
               for pc in self.comparison.pairs for mc in pc.metrics
               if fails(mc, strict=self.strict, allow_missing=self.allow_missing)
               or (self.strict_inconclusive and mc.status == INCONCLUSIVE)]
        out += [Failure(c.benchmark, c.metric, c.message, f"{c.from_generation} → {c.to_generation}")
                for c in self.generation_checks if c.verdict == "fail"]
        for rec in () if self.allow_missing else self.comparison.only_baseline:
            nearest = nearest_difference(rec, self.comparison.only_current)
            out.append(Failure(rec.label, "*", "benchmark of the baseline missing from the current run "
                               "(--allow-missing accepts that)" + (f"; the nearest current benchmark differs in: "
                                                                   f"{nearest}" if nearest else ""), _device_text(rec)))
        return tuple(out)

    @property
    def inconclusive(self) -> list[tuple[PairComparison, MetricComparison]]:
        """The rows the interval could not decide: listed by the gate, failures only with ``strict_inconclusive``."""
        return self.comparison.metrics_where(INCONCLUSIVE)

    @property
    def passed(self) -> bool:
        return not self.failures


def _device_text(base: Record, cur: Record | None = None) -> str:
    b, c = (r.device.label if r.device is not None else "no device" for r in (base, base if cur is None else cur))
    return b if b == c else f"{b} → {c}"


def interval_text(mc: MetricComparison) -> str:
    """A comparison's ratio interval as the gate and the inline baseline check write it ("" where none)."""
    iv = mc.interval
    return f"ratio interval [{iv['lo']:.4g}, {iv['hi']:.4g}] ({iv['level']:.0%}, n={iv['n']})" if iv else ""


def _reason(mc: MetricComparison) -> str:
    if mc.status == UNITS_DIFFER:
        return mc.note
    if mc.status == INCONCLUSIVE:
        return f"inconclusive (--strict-inconclusive): {interval_text(mc)}; {mc.note}"
    if mc.status == MISSING_CURRENT:
        return ("metric missing from the current run (not recorded, or not a number); --allow-missing accepts that"
                if mc.direction in ("higher", "lower") else "metric missing from the current run (--strict)")
    if mc.status == NOT_FINITE:
        return f"current value is {format_number(mc.current)} (baseline {format_number(mc.baseline)})"
    assert mc.change is not None and mc.max_regression is not None
    worse, word = (-mc.change, "dropped") if mc.direction == "higher" else (mc.change, "rose")
    text = f"{word} {worse * 100:.2f}% (limit {mc.max_regression * 100:g}%, {mc.direction} is better)"
    if mc.interval:
        return f"{text}; {interval_text(mc)} wholly past the limit"
    if mc.note.startswith(mc.basis):
        return f"{text}; {mc.note}"
    return f"{text}; {mc.basis} comparison" + (f" ({mc.note})" if mc.note else "")


def _norm(text: Any) -> str:
    return str(text or "").strip().lower()


def check_generation(claim: Any, pc: PairComparison, info: Mapping[str, MetricInfo]) -> GenerationCheck | None:
    """Check ``claim`` on one pair (None: no metric gives the speedup): the two-run ratio of its metric (``speedup``:
    the first throughput both recorded, else the median round time), on its bootstrap interval where both have 2+
    rounds of it, else on its value."""
    from pytest_genai.claims import check_value
    from pytest_genai.stats import bootstrap_ratio_interval

    base, cur = pc.pair.baseline, pc.pair.current
    if claim.metric != SPEEDUP_METRIC:
        direction = info[claim.metric].direction if claim.metric in info else None
        candidates = [(claim.metric, direction)] if direction in ("higher", "lower") else []
    else:
        candidates = [(m, "higher") for m in THROUGHPUT_METRICS] + [(BENCH_MEDIAN_METRIC, "lower")]
    basis = next(((m, d) for m, d in candidates if m in base.metrics and m in cur.metrics), None)
    if basis is None:
        return None
    metric, direction = basis
    b, c = base.metrics[metric], cur.metrics[metric]
    s = speedup(float(b), float(c), direction)
    interval = None
    base_rounds, cur_rounds = base.rounds.get(metric) or (), cur.rounds.get(metric) or ()
    if len(base_rounds) >= 2 and len(cur_rounds) >= 2:
        num, den = (cur_rounds, base_rounds) if direction == "higher" else (base_rounds, cur_rounds)
        with contextlib.suppress(ValueError):  # a non-positive round: no ratio to bootstrap
            interval = bootstrap_ratio_interval(num, den)
    verdict = check_value(claim, s, interval)
    frm, to = base.device.generation, cur.device.generation  # gate_runs checks pairs across two generations only
    return GenerationCheck(
        claim_id=claim.id, benchmark=cur.label, metric=metric, from_generation=frm, to_generation=to, baseline=b,
        current=c, speedup=s, min=claim.min, max=claim.max,
        paper=f"{claim.source}: {claim.paper_text}" if claim.paper_text else claim.source, verdict=verdict.verdict,
        message=f"{frm}→{to} speedup of {metric}: {verdict.message}",
        interval=None if interval is None else interval.to_json())


def gate_runs(baseline: Run, current: Run, info: Mapping[str, MetricInfo], thresholds: Thresholds,
              claims: Sequence[Any] = (), strict: bool = False, allow_missing: bool = False,
              strict_inconclusive: bool = False, allow_undecided: bool = False) -> GateResult:
    """Compare ``current`` with ``baseline`` and decide pass/fail, checking generation claims where they apply."""
    comparison = compare_runs(baseline, current, info, thresholds)
    notes: list[str] = []
    checks: list[GenerationCheck] = []
    pairs: list[PairComparison] = []
    unclaimed: set[tuple[str, str]] = set()
    for pc in comparison.pairs:
        base, cur = pc.pair.baseline, pc.pair.current
        if base.device is None or cur.device is None or _norm(base.device.generation) == _norm(cur.device.generation):
            pairs.append(pc)
            continue
        gens = (base.device.generation, cur.device.generation)
        # in scope: by the claims model's generation rule (``a100`` also matches ``a100-sxm4-80gb``), then by
        # experiment, models and ``where``
        applicable = [claim for claim in claims if claim.matches_generations(*map(_norm, gens))
                      and (not claim.experiment or cur.experiment == claim.experiment)
                      and (not claim.models or (cur.model or "").lower() in {m.lower() for m in claim.models})
                      and not any(cur.config.get(k) != v for k, v in claim.where.items())]
        replaced: set[str] = set()
        for claim in applicable:
            check = check_generation(claim, pc, info)
            if check is None:
                notes.append(f"claim {claim.id} ({claim.metric}) applies to {cur.label}, but the two runs share no "
                             f"metric its speedup can be computed from (one of {', '.join(THROUGHPUT_METRICS)})")
                continue
            checks.append(check)
            # only a decided claim that rules out a slowdown itself may stand in for the threshold
            if (claim.min or 0.0) >= 1.0 and check.verdict in ("pass", "fail"):
                replaced.add(check.metric)
        if not applicable:
            unclaimed.add(gens)
        pairs.append(PairComparison(pc.pair, tuple(
            dataclasses.replace(m, status=CLAIM_CHECKED, max_regression=None) if m.metric in replaced else m
            for m in pc.metrics)))
    notes += [f"baseline ran on {frm}, current on {to}: the claims data has no generation claim for {frm}→{to} "
              "that applies; its metrics are gated as for a software change" for frm, to in sorted(unclaimed)]
    return GateResult(dataclasses.replace(comparison, pairs=tuple(pairs)), tuple(checks), tuple(notes), strict,
                      allow_missing, strict_inconclusive, allow_undecided)
