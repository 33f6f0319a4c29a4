"""Metric-by-metric comparison of two runs (``pytest-genai compare``), the basis of the gate (docs/report.md).
Contention, a disagreeing ``machine_normalized`` row or numerator and Holm's correction only turn decisions undecided."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from pytest_genai.identity import environment_differences
from pytest_genai.runtime.reference import REFERENCE_LABEL
from pytest_genai.stack import stack_differences
from pytest_genai.stats import Interval, bootstrap_ratio_interval, run_spread_interval

from .decision import ALPHA, IMPROVED, INCONCLUSIVE, UNCHANGED, decide, ratio_verdict, z_ppf
from .deltas import is_regression, relative_change
from .matching import Pair, match_records
from pytest_genai.results.measurement import Measurement
from pytest_genai.results.registry import UNIT_SCALES, MetricInfo, unit_factor
from pytest_genai.results.runs import Record, Run
from .thresholds import Thresholds

REGRESSED, NOT_FINITE, WORSE, BETTER, SAME = "regressed", "not finite", "worse", "better", "same"
NO_DIRECTION, UNREGISTERED = "no direction", "unregistered"
MISSING_CURRENT, MISSING_BASELINE = "missing in current", "new in current"
BASELINE_UNUSABLE = "baseline unusable"  # a nan/inf baseline: nothing to compare with; not counted as gated
NOT_COMPARABLE = "not comparable"  # machine_normalized rows on other devices or reference kernels: not gated
UNITS_DIFFER = "units differ"  # a directed metric in units with no known conversion: refused, never gated as-is

FAILING = (REGRESSED, NOT_FINITE, UNITS_DIFFER)  # the gate always fails these (missing, inconclusive: see fails)
GATED = (REGRESSED, NOT_FINITE, WORSE, BETTER, SAME, IMPROVED, UNCHANGED, INCONCLUSIVE)  # judged against a threshold
INTERVAL, EXACT, POINT = "interval", "exact", "point"  # how a row was judged (MetricComparison.basis)
VERDICTS = (REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE)  # what every gated row reads as (MetricComparison.verdict)

MAX_ROUNDS = 100  # rounds a side compared: more are thinned to evenly spaced order statistics (no narrower interval)
POINT_NOISE_FACTOR = 2.0  # a value without rounds decides a regression only past this factor: inside, it may be noise

_DIRECTED = ("higher", "lower")
_PAST_BUT = "undecided: past the threshold, but "
_LAST_N = "gate against several runs (last:N)"


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one matched benchmark: both values, the change and its verdict."""

    metric: str
    unit: str
    direction: str | None
    baseline: float | None
    current: float | None
    change: float | None
    max_regression: float | None
    status: str
    source: str
    basis: str = EXACT
    interval: Mapping[str, Any] | None = None  # an interval row's current/baseline ratio interval (Interval.to_json)
    note: str = ""  # why an interval row is inconclusive, which side a point row lacked rounds on, a unit conversion
    past_threshold: bool | None = None  # the estimate of the change is worse than the threshold; set when inconclusive
    optional: bool = False  # recorded only where the machine can measure it (energy): missing is listed, not failed

    @property
    def undecided(self) -> bool:
        """An inconclusive row whose change is past its threshold: the gate cannot pass it (exit 3) nor fail it."""
        return self.status == INCONCLUSIVE and bool(self.past_threshold)

    @property
    def verdict(self) -> str | None:
        """A gated row's verdict (worse/better/same read as unchanged unless past the threshold); None if not gated."""
        if self.status in (WORSE, BETTER, SAME):
            return IMPROVED if self.improved_past_limit else UNCHANGED
        return REGRESSED if self.status == NOT_FINITE else self.status if self.status in VERDICTS else None

    @property
    def ratio(self) -> float | None:
        b, c = self.baseline, self.current
        return None if b is None or c is None or b == 0 or not (math.isfinite(b) and math.isfinite(c)) else c / b

    @property
    def gated(self) -> bool:
        return self.status in GATED

    @property
    def improved_past_limit(self) -> bool:
        """True when the value got better by more than its threshold (worth a look: a real change, or noise)."""
        if self.status != BETTER or self.max_regression is None or self.baseline is None or self.current is None:
            return self.status == IMPROVED
        assert self.direction in _DIRECTED  # better past the limit: a regression the other way
        return is_regression(self.baseline, self.current, _DIRECTED[self.direction == "higher"], self.max_regression)


@dataclass(frozen=True)
class PairComparison:
    pair: Pair
    metrics: tuple[MetricComparison, ...]


@dataclass(frozen=True)
class Comparison:
    baseline: Run
    current: Run
    pairs: tuple[PairComparison, ...]
    only_baseline: tuple[Record, ...]
    only_current: tuple[Record, ...]

    def metrics_where(self, *statuses: str) -> list[tuple[PairComparison, MetricComparison]]:
        return [(pc, m) for pc in self.pairs for m in pc.metrics if m.status in statuses]

    @property
    def gated_count(self) -> int:
        """Metric values judged against a threshold (not: missing, new, undirected, or with an unusable baseline)."""
        return sum(m.gated for pc in self.pairs for m in pc.metrics)

    @property
    def environment_differences(self) -> list[tuple[str, int]]:
        """How the paired benchmarks' environments differ (``threads 2 -> 16``), each with how many pairs show it."""
        counts = Counter(line for pc in self.pairs
                         for line in environment_differences(pc.pair.baseline.environment, pc.pair.current.environment))
        keys = list(dict.fromkeys(line.split(" ", 1)[0].rstrip(":") for line in counts))  # a key's lines together
        return sorted(counts.items(), key=lambda item: keys.index(item[0].split(" ", 1)[0].rstrip(":")))

    @property
    def stack_differences(self) -> list[str]:
        """Software-stack items that differ (``torch 2.5.1 -> 2.6.0``): a changed library is the first suspect."""
        return stack_differences(self.baseline.stack, self.current.stack)


def fails(mc: "MetricComparison", *, strict: bool = False, allow_missing: bool = False) -> bool:
    """Whether ``mc`` fails the gate; a directed metric missing from the current run fails unless ``allow_missing``
    (a throughput that stopped being recorded must not pass as "nothing regressed")."""
    return mc.status in FAILING or (mc.status == MISSING_CURRENT and not mc.optional
                                    and (strict or (not allow_missing and mc.direction in _DIRECTED)))


def compare_metric(metric: str, baseline: float | None, current: float | None, info: MetricInfo | None,
                   max_regression: float, unit: str = "", source: str = "measured") -> MetricComparison:
    """Compare one metric's two values and classify the change (pure)."""
    direction = info.direction if info is not None else None
    unit = info.unit if info is not None and info.unit else unit
    undirected = NO_DIRECTION if direction else UNREGISTERED
    change: float | None = None
    if current is not None and not math.isfinite(current) and direction in _DIRECTED:
        status = NOT_FINITE  # a run that produced nan/inf did not reproduce a number, whatever the baseline was
    elif baseline is None or current is None:
        status = MISSING_BASELINE if baseline is None else MISSING_CURRENT
    elif not math.isfinite(baseline):
        status = BASELINE_UNUSABLE if direction in _DIRECTED else undirected
    elif not math.isfinite(current):
        status = undirected
    else:
        change = relative_change(baseline, current)
        if direction not in _DIRECTED:
            status = undirected
        elif is_regression(baseline, current, direction, max_regression):
            status = REGRESSED
        else:
            status = SAME if change == 0 else BETTER if (change > 0) == (direction == "higher") else WORSE
    limit = max_regression if direction in _DIRECTED and status in GATED else None
    return MetricComparison(metric, unit, direction, baseline, current, change, limit, status, source)


def stall_share(rec: Record) -> float | None:
    """The share of the measurement with a task waiting for a CPU (``cpu_contention`` attachment), else None."""
    reading = rec.attachments.get("cpu_contention")
    value = reading.get("stall_share_measured") if isinstance(reading, Mapping) else None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _thin(rounds: Sequence[float]) -> list[float]:
    xs = sorted(rounds)
    return xs if len(xs) <= MAX_ROUNDS else [xs[round(i * (len(xs) - 1) / (MAX_ROUNDS - 1))] for i in range(MAX_ROUNDS)]


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


@dataclass(frozen=True)
class Sides:
    """One metric of a matched pair, both sides in one unit (:func:`normalise`)."""

    unit: str
    baseline: float | None
    current: float | None
    rounds: tuple[list[float] | None, list[float] | None] = (None, None)  # thinned; None under two rounds
    intervals: tuple[tuple[float, float] | None, tuple[float, float] | None] = (None, None)  # without rounds
    runs: tuple[list[float], ...] = ()  # the baseline's runs (last:N): each run's rounds (thinned), or its one value
    note: str = ""  # the conversions made; where refused, why none is known
    refused: bool = False


def normalise(base: Record, cur: Record, name: str, registered: str, timing_field: str = "") -> Sides:
    """``name``'s two sides in the unit ``registered`` (or a shared unknown unit), else refused."""
    b, c = (r.measurement(name) or Measurement(r.timing.get(timing_field), unit=r.units.get(name)) for r in (base, cur))
    b_unit, c_unit = b.unit or registered, c.unit or registered
    target = registered or c_unit or b_unit
    if b_unit == c_unit and unit_factor(b_unit, target) is None:
        target = b_unit
    bf, cf = (unit_factor(u, target) if u and target else 1.0 for u in (b_unit, c_unit))
    if bf is None or cf is None:
        why = (f"the baseline records it in {b_unit!r}, the current run in {c_unit!r}"
               + (f" (the registry: {registered!r})" if registered and registered not in (b_unit, c_unit) else "")
               + ": no known conversion, so the values are not compared — record both in one unit")
        return Sides(target, b.value, c.value, note=why, refused=True)

    def scale(x: Any, f: float) -> Any:  # a value, or a sequence of them
        return x if x is None or f == 1.0 else x * f if isinstance(x, (int, float)) else tuple(v * f for v in x)

    notes = [f"the {side}'s {unit} converted to {target}"
             for side, unit, f in (("baseline", b_unit, bf), ("current run", c_unit, cf)) if f != 1.0]
    rounds = tuple(_thin(scale(r, f)) if r and len(r) >= 2 else None for r, f in ((b.rounds, bf), (c.rounds, cf)))
    return Sides(target, scale(b.value, bf), scale(c.value, cf), rounds, (scale(b.interval, bf), scale(c.interval, cf)),
                 tuple(_thin(scale(r, bf)) for r in base.run_rounds.get(name, ())), _join(*notes))


@dataclass(frozen=True)
class _Setting:
    """What every row of one matched pair is judged beside (``other_ruler``: '' when the rulers compare)."""

    base_stall: float | None
    cur_stall: float | None
    other_ruler: str
    run_noise: float


def _first_row(name: str, sides: Sides, definition: MetricInfo | None, limit: float, source: str) -> MetricComparison:
    """The row on its two values alone, labelled exact or point; a refused directed metric fails the gate."""
    optional = bool(definition is not None and definition.optional)
    direction = definition.direction if definition is not None else None
    if sides.refused:
        status = (UNITS_DIFFER if direction in _DIRECTED and sides.baseline is not None and sides.current is not None
                  else NO_DIRECTION if direction == "none" else UNREGISTERED if direction is None
                  else MISSING_CURRENT if sides.current is None else MISSING_BASELINE)
        return MetricComparison(name, sides.unit, direction, sides.baseline, sides.current, None, None, status, source,
                                note=sides.note, optional=optional)
    mc = compare_metric(name, sides.baseline, sides.current, definition, limit, unit=sides.unit, source=source)
    noisy = definition is not None and definition.measured_inputs
    computed = all(part in ("modeled", "spec", "config") for part in source.split("/"))  # same inputs, same number
    published = "reference" in source.split("/")  # a vendor's number, from settings the rows may not share
    deterministic = not published and ((definition is not None and definition.max_regression is not None
                                        and not definition.timing) or (computed and not noisy))
    return replace(mc, basis=EXACT if deterministic else POINT, optional=optional, note=_join(
        sides.note, "modeled from measured times, so compared as a measurement" if noisy and computed else ""))


def _judge(mc: MetricComparison, sides: Sides, normalized: bool, setting: _Setting) -> MetricComparison:
    """``mc`` judged against the baseline's runs (``last:N``), else on both runs' rounds, else as a point row."""
    if mc.status not in (REGRESSED, WORSE, BETTER, SAME) or mc.max_regression is None:
        return mc  # missing, not finite, undirected, refused: nothing rounds could decide
    if normalized and setting.other_ruler:
        return replace(mc, status=NOT_COMPARABLE, max_regression=None, note=_join(mc.note, setting.other_ruler))
    if len(sides.runs) >= 2:
        return mc if mc.basis == EXACT else _judge_on_runs(mc, sides, setting)
    base, cur = sides.rounds
    if not (base and cur):
        if mc.basis == EXACT and not (base or cur):
            return mc
        lacking = "either run" if not (base or cur) else "the current run" if base else "the baseline"
        return _point_rule(mc, f"no rounds recorded in {lacking}, so noise is not judged", sides, setting)
    assert mc.direction in _DIRECTED
    try:
        decision = decide(base, cur, mc.direction, mc.max_regression, run_noise=setting.run_noise)
    except ValueError as exc:  # a threshold no drop can pass (checked with the thresholds), or a non-finite round
        return _point_rule(mc, f"the rounds give no decision ({exc})", sides, setting)
    row = replace(mc, status=decision.verdict, basis=INTERVAL, interval=decision.to_json(),
                  past_threshold=decision.past_margin, note=_join(mc.note, _decision_note(decision, mc.max_regression)))
    return _under_contention(row, setting)


def _undecided(mc: MetricComparison, why: str) -> MetricComparison:
    return replace(mc, status=INCONCLUSIVE, past_threshold=True, note=_join(mc.note, why))


def _under_contention(mc: MetricComparison, setting: _Setting) -> MetricComparison:
    """A contended current run is not called regressed, nor cleared against a contended baseline: it reads undecided."""
    from pytest_genai.claims.check import CONTENDED_SHARE

    cur, base = setting.cur_stall, setting.base_stall
    if mc.status == REGRESSED and cur is not None and cur > CONTENDED_SHARE:
        return _undecided(mc, f"undecided under contention: slower past the threshold, but a task waited for a CPU "
                              f"{cur:.0%} of the current run's measurement (over {CONTENDED_SHARE:.0%}); rerun on an "
                              "idle machine")
    if mc.status in (UNCHANGED, IMPROVED, WORSE, BETTER, SAME) and base is not None and base > CONTENDED_SHARE:
        return _undecided(mc, f"undecided under contention: a task waited for a CPU {base:.0%} of the baseline's "
                              f"measurement (over {CONTENDED_SHARE:.0%}), so a contended baseline cannot clear the "
                              "current run; record the baseline on an idle machine")
    return mc


def _point_rule(mc: MetricComparison, why: str, sides: Sides, setting: _Setting) -> MetricComparison:
    """A point regression stands only past :data:`POINT_NOISE_FACTOR` or with disjoint own intervals, else undecided."""
    mc = _under_contention(replace(mc, basis=POINT, note=_join(mc.note, f"point comparison: {why}")), setting)
    if mc.status != REGRESSED:
        return mc
    if all(i is not None and 0 < i[0] <= i[1] for i in sides.intervals):
        grow = math.exp(z_ppf(1 - ALPHA) * setting.run_noise)
        (b_lo, b_hi), (c_lo, c_hi) = ((i[0] / grow, i[1] * grow) for i in sides.intervals if i is not None)
        return mc if b_hi < c_lo or c_hi < b_lo else _undecided(
            mc, f"{_PAST_BUT}the runs' own intervals of the value overlap ([{b_lo:.4g}, {b_hi:.4g}] and "
                f"[{c_lo:.4g}, {c_hi:.4g}]): noise could explain the change")
    assert mc.baseline is not None and mc.current is not None
    factor = (mc.current / mc.baseline if mc.direction == "lower" else mc.baseline / mc.current) \
        if mc.baseline > 0 and mc.current > 0 else math.inf
    if factor <= POINT_NOISE_FACTOR:
        return _undecided(mc, f"{_PAST_BUT}a value without rounds decides a regression only past "
                              f"{POINT_NOISE_FACTOR:g}x (same-code point rows moved up to 1.4x); record rounds, or "
                              f"{_LAST_N}")
    return mc


def _judge_on_runs(mc: MetricComparison, sides: Sides, setting: _Setting) -> MetricComparison:
    """``mc`` on the runs' prediction interval of the ratio, widened to the rounds' bootstrap interval if both have."""
    base_rounds, cur_rounds = sides.rounds
    limit = mc.max_regression
    assert mc.current is not None and mc.baseline is not None and mc.direction in _DIRECTED and limit is not None
    try:
        interval = run_spread_interval(cur_rounds or [mc.current], sides.runs)
    except ValueError as exc:  # a non-positive value: no ratio
        why = f"point comparison: the runs give no ratio interval ({exc})"
        return replace(mc, basis=POINT, note=_join(mc.note, why))
    how = f"baseline of {len(sides.runs)} runs: their spread between runs sets the interval"
    if base_rounds and cur_rounds:
        try:
            within = bootstrap_ratio_interval(cur_rounds, base_rounds)
        except ValueError:
            pass
        else:  # widening keeps the prediction interval's coverage
            interval = Interval(min(interval.lo, within.lo), max(interval.hi, within.hi), interval.level, interval.n,
                                f"{interval.method}, joined with the {within.method} of the newest run's rounds")
    verdict = ratio_verdict(interval.lo, interval.hi, mc.direction, limit)
    past = is_regression(mc.baseline, mc.current, mc.direction, limit)
    why = ""
    if verdict == INCONCLUSIVE:
        why = ((_PAST_BUT if past else "") +
               f"the interval straddles the {limit * 100:g}% threshold: noise could put the change on either side")
    elif (verdict == REGRESSED) != past:
        verdict = INCONCLUSIVE
        why = ("the recorded value and the runs' interval disagree about the threshold; record the value of the "
               "statistic the rounds are for (their median)")
    row = replace(mc, status=verdict, basis=INTERVAL, interval=interval.to_json(), past_threshold=past,
                  note=_join(mc.note, how, why))
    return _under_contention(row, setting)


def _unconfirmed(rows: Sequence[MetricComparison], why_not: Mapping[str, str]) -> tuple[MetricComparison, ...]:
    """``rows`` with each regression that ``why_not`` gives a reason against (by metric) read undecided."""
    return tuple(_undecided(r, why_not[r.metric]) if r.status == REGRESSED and r.metric in why_not else r
                 for r in rows)


def _over_numerators(rows: Sequence[MetricComparison], info: Mapping[str, MetricInfo]) -> tuple[MetricComparison, ...]:
    """A regression of a ratio over a measured peak (MFU) stands only where its ``numerator`` regressed too."""
    by_metric = {r.metric: r for r in rows}
    return _unconfirmed(rows, {
        r.metric: f"worse past the threshold, but {n.metric} (what it divides by a peak) reads "
                  f"{n.verdict or n.status}: the peak differs between the runs (a CPU's is measured by each "
                  f"session), and {n.metric} is the run's speed"
        for r in rows if (d := info.get(r.metric)) is not None and d.numerator
        and (n := by_metric.get(d.numerator)) is not None and n.status != REGRESSED})


def _other_ruler(base: Record, cur: Record) -> str:
    """Why the records' ``machine_normalized`` metrics are not comparable ('' when they are)."""
    b_ref, c_ref = base.labels.get(REFERENCE_LABEL), cur.labels.get(REFERENCE_LABEL)
    if not b_ref or not c_ref:
        side = "either run" if not (b_ref or c_ref) else "the baseline" if not b_ref else "the current run"
        return f"not comparable: {side} names no {REFERENCE_LABEL} label, so the rulers may differ"
    if b_ref != c_ref:
        return f"not comparable: measured against different reference kernels ({b_ref} and {c_ref})"
    if base.device != cur.device:
        b_dev, c_dev = (r.device.label if r.device else "none" for r in (base, cur))
        return (f"not comparable: a ruler per device, and these ran on {b_dev} and {c_dev} (the raw times and "
                f"rates compare the hardware)")
    return ""


def _speed_row(mc: MetricComparison, info: Mapping[str, MetricInfo]) -> bool:
    """A measured row a slower machine moves: a time, a rate, MFU, or a number modeled from measured times."""
    d, scale = info.get(mc.metric), (UNIT_SCALES.get(mc.unit.strip()) if mc.unit else None)
    rate = bool(scale and scale[0] in ("time", "bandwidth", "flop rate")) or mc.unit.endswith("/s")
    return mc.basis != EXACT and bool((d is not None and (d.timing or d.measured_inputs or d.numerator)) or rate)


def _corroborated(rows: list[MetricComparison], info: Mapping[str, MetricInfo]) -> tuple[MetricComparison, ...]:
    """A speed row's regression stands only where the comparable ``machine_normalized`` row regressed too."""
    normalized = [r for r in rows if (d := info.get(r.metric)) is not None and d.machine_normalized and r.gated]
    if not normalized or any(r.status == REGRESSED for r in normalized):
        return tuple(rows)
    ref = normalized[0]
    why = (f"slower past the threshold, but {ref.metric} (the step over a reference kernel timed beside it) "
           f"reads {ref.verdict}: the machine was slower, or so were the reference's own ops (a stack change "
           f"that slows both); judge on a quiet node or with --strict-inconclusive")
    return _unconfirmed(rows, {r.metric: why for r in rows if r not in normalized and _speed_row(r, info)})


def holm(rows: Sequence[Sequence[MetricComparison]]) -> list[tuple[MetricComparison, ...]]:
    """Holm's step-down over the Welch-tested rows: a same-code gate fails at most ``ALPHA`` of the time in all."""
    tested = [(float(p), i, j) for i, group in enumerate(rows) for j, mc in enumerate(group) if mc.basis == INTERVAL
              and isinstance(p := (mc.interval or {}).get("p_worse"), (int, float)) and math.isfinite(p)]
    m = len(tested)
    out = [list(group) for group in rows]
    holding = False
    for k, (p, i, j) in enumerate(sorted(t for t in tested if rows[t[1]][t[2]].status == REGRESSED)):  # by p, then row
        holding = holding or p > ALPHA / (m - k)
        if holding:
            out[i][j] = _undecided(out[i][j], f"undecided: significant alone (one-sided p {p:.2g}) but not across "
                                   f"the {m} rows this gate tested (Holm, familywise {ALPHA:g}; it needs p under "
                                   f"{ALPHA / (m - k):.2g}): gate fewer metrics, record more rounds, or {_LAST_N}")
    return [tuple(group) for group in out]


def _decision_note(decision: Any, limit: float) -> str:
    """Why :func:`.decision.decide` left a row inconclusive, and what would decide it ('' for a decided row)."""
    if decision.verdict != INCONCLUSIVE:
        return ""
    ends = (f"[{decision.lo:.4g}x, {decision.hi:.4g}x]" if decision.scale == "log"
            else f"difference [{decision.lo:.4g}, {decision.hi:.4g}]")
    if not decision.past_margin:
        return (f"the {decision.level:.0%} interval {ends} reaches past the {limit * 100:g}% threshold: noise could "
                "put the change on either side")
    advice = (f", and {decision.launch_share:.0%} of its width is the noise between launches of the same code, which "
              f"more rounds do not shrink: {_LAST_N}" if decision.launch_share > 0.5 else
              f": record more rounds a side, or {_LAST_N}")
    return (f"undecided: the estimate {decision.ratio:.4g}x is past the {limit * 100:g}% threshold but not significant "
            f"(one-sided p {decision.p_worse:.2g}); the {decision.level:.0%} interval {ends} reaches back inside "
            f"it{advice}")


def compare_records(base: Record, cur: Record, info: Mapping[str, MetricInfo], thresholds: Thresholds
                    ) -> tuple[MetricComparison, ...]:
    """Every metric of a matched pair: normalised, judged, then the rules across the pair's rows."""
    experiment = cur.experiment or base.experiment
    stalls, ruler, noise = (stall_share(base), stall_share(cur)), _other_ruler(base, cur), thresholds.run_noise
    # the recorded metrics, baseline's first, then pytest-benchmark statistics a threshold names (``mean:5%``)
    names = dict.fromkeys([*base.metrics, *cur.metrics], "")
    names.update({m: f for m, f in thresholds.timing_fields().items()
                  if m not in names and (f in base.timing or f in cur.timing)})
    rows = []
    for name, timing_field in names.items():
        definition = info.get(name)
        registered = (definition.unit if definition is not None else "") or ("s" if timing_field else "")
        sides = normalise(base, cur, name, registered, timing_field)
        limit = thresholds.for_metric(name, experiment, definition.max_regression if definition else None)
        source = "/".join(sorted({r.sources.get(name, "measured") for r in (base, cur) if name in r.metrics}))
        row = _first_row(name, sides, definition, limit, source or "measured")
        free = definition is not None and definition.contention_free  # an instruction count: a load does not move it
        setting = _Setting(*((None, None) if free else stalls), ruler, noise.for_metric(name, experiment))
        rows.append(_judge(row, sides, bool(definition and definition.machine_normalized), setting))
    return _over_numerators(_corroborated(rows, info), info)


def compare_runs(baseline: Run, current: Run, info: Mapping[str, MetricInfo], thresholds: Thresholds) -> Comparison:
    """Match the two runs' benchmarks and compare every metric of every pair, Holm-corrected across the gate."""
    matching = match_records(baseline.records, current.records)
    rows = holm([compare_records(p.baseline, p.current, info, thresholds) for p in matching.pairs])
    pairs = tuple(PairComparison(p, r) for p, r in zip(matching.pairs, rows))
    return Comparison(baseline, current, pairs, matching.only_baseline, matching.only_current)
