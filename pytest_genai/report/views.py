"""Tables built from runs, comparisons and gate results (the content; :mod:`.tables` does the layout)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

from .compare import Comparison, MetricComparison, fails, stall_share
from pytest_genai.identity import DATA_IDENTITY_KEYS, data_label
from .gate import GateResult, GenerationCheck
from .matching import nearest_difference
from pytest_genai.results.registry import MetricInfo
from pytest_genai.results.runs import Record, Run, config_value_label
from pytest_genai.tables import (MAX_ROW_CHARS, Table, bound_text, distinct_parts, format_change, format_number,
                                  format_value, group_by, make_table, modeled_mark, shorten, shorten_unique)

MAX_LABEL_CHARS = 24  # a longer label is a description, not a table cell
MAX_VALUE_COLUMNS = 8  # metric and label columns per table
MAX_ID_CHARS = 32  # a longer config id gives way to the keys that vary
MAX_TRANSPOSED_RECORDS = 6  # up to this many rows, too-wide results are turned: a column per config
FLAG_METRIC_SUFFIXES = ("compute_bound", "compute_bound_modeled", "compute_bound_measured")  # 1.0 / 0.0: yes / no

Column = tuple[str, bool, Callable[[Record], str]]
_VERDICT_ORDER = {"fail": 0, "inconclusive": 1, "pass": 2}
_ARROWS = {"higher": "↑ higher", "lower": "↓ lower", "none": "—", None: "? (unregistered)"}
_DATA_KEYS = ("data_source",) + DATA_IDENTITY_KEYS
BASIS_NOTE = ("Source: the paper and section a paper claim comes from; target: a goal of this project, not a paper "
              "claim (reported, never fails a test); physics: a check any correct measurement passes, not a paper "
              "claim.")
REFERENCE_NOTE = ("Reference: the run against a vendor's published measurement of the same configuration "
                  "(pytest-genai reference check); reported, never fails a test.")


def device_text(base: Record, cur: Record | None = None) -> str:
    """The record's device generation, ``baseline → current`` where the two differ."""
    one, two = (r.device.generation if r.device is not None else "—" for r in (base, base if cur is None else cur))
    return one if one == two else f"{one} → {two}"


_NAMED: dict[str, Callable[[Record], str]] = {"device": device_text, "model": lambda r: r.model_label}


def with_unit(name: str, unit: str | None) -> str:
    """``name [unit]``; a unitless (``1``) or unknown unit is not written."""
    return f"{name} [{unit}]" if unit and unit != "1" else name


def comparison_table(comparison: Comparison, *, strict: bool = False, allow_missing: bool = False,
                     where: Callable[[MetricComparison], bool] | None = None) -> Table:
    """One row per (matched benchmark, metric) that ``where`` keeps."""
    headers = ["benchmark", "device", "metric", "baseline", "current", "ratio", "ratio interval", "change", "better",
               "limit", "judged on", "status"]
    numeric = [False, False, False, True, True, True, False, True, False, True, False, False]
    rows = [[pc.pair.current.label, device_text(pc.pair.baseline, pc.pair.current),
             with_unit(mc.metric, mc.unit) + modeled_mark(mc.metric, mc.source),
             format_number(mc.baseline), format_number(mc.current),
             "—" if mc.ratio is None else f"{mc.ratio:.4g}x",
             "—" if not mc.interval else "[{lo:.4g}x, {hi:.4g}x] {level:.0%}".format(**mc.interval),
             format_change(mc.change),
             _ARROWS.get(mc.direction, str(mc.direction)),
             "—" if mc.max_regression is None else f"{mc.max_regression * 100:g}%",
             mc.basis if mc.gated else "—",
             (mc.status.upper() if fails(mc, strict=strict, allow_missing=allow_missing) else mc.status)
             # every two-value row has this note; its "judged on" cell already says so
             + (f" ({mc.note})" if mc.note and not mc.note.startswith(
                 "point comparison: no rounds recorded in either run") else "")]
            for pc in comparison.pairs for mc in pc.metrics if where is None or where(mc)]
    return make_table(headers, rows, numeric)


def generation_table(checks: Sequence[GenerationCheck]) -> Table:
    rows = [[c.claim_id, c.benchmark, f"{c.from_generation} → {c.to_generation}", c.metric,
             format_number(c.baseline), format_number(c.current),
             "—" if math.isnan(c.speedup) else f"{c.speedup:.3g}x",
             f"[{format_number(c.min)}, {format_number(c.max)}]", c.paper,
             c.verdict.upper() if c.verdict == "fail" else c.verdict] for c in checks]
    return make_table(["claim", "benchmark", "generations", "metric", "baseline", "current", "speedup", "bound",
                       "paper", "verdict"], rows, [False, False, False, False, True, True, True, False, False, False])


def one_sided_table(only_baseline: Sequence[Record], only_current: Sequence[Record], *,
                    list_baseline: bool = True) -> Table:
    """Benchmarks without a counterpart, and how they differ from the nearest one of the other run."""
    rows = [[r.label, device_text(r), "baseline only", nearest_difference(r, only_current) or "—"]
            for r in (only_baseline if list_baseline else ())]
    rows += [[r.label, device_text(r), "current only",
              nearest_difference(r, only_baseline, rec_is_current=True) or "—"] for r in only_current]
    return make_table(["benchmark", "device", "present in", "nearest counterpart differs in (baseline -> current)"],
                      rows)


def failures_table(result: GateResult) -> Table:
    return make_table(["benchmark", "device", "metric", "why"],
                      [[f.benchmark, f.device or "—", f.metric, f.reason] for f in result.failures])


def without_reference(records: Sequence[Record]) -> list[Record]:
    """``records`` without their ``reference`` verdicts (the report shows those in their own section)."""
    return [dataclasses.replace(r, claims=tuple(v for v in r.claims if v.get("basis") != "reference"))
            if any(v.get("basis") == "reference" for v in r.claims) else r for r in records]


def reference_table(records: Sequence[Record]) -> Table | None:
    """One row per ``reference`` verdict; None when the run has none."""
    rows = [_claim_cells(rec, v) + [str(v.get("verdict", "?")), str(v.get("message", ""))]
            for rec in records for v in rec.claims if v.get("basis") == "reference"]
    return make_table(["claim", "benchmark", "device", "value", "bound", "verdict", "against the published number"],
                      rows, [False, False, False, True, False, False, False]) if rows else None


def machine_table(run: Run) -> Table:
    """Where the run ran, for the report's first screen: devices, software, commit, time and CPU contention."""
    from pytest_genai.claims.check import CONTENDED_SHARE

    devices = [f"{d.get('name') or d.get('kind')} ({d.get('generation') or d.get('kind')})" for d in run.devices]
    rows = [["devices", "; ".join(dict.fromkeys(devices)) or ", ".join(run.generations) or "—"]]
    stack = run.stack or {}
    rows += [[label, str(stack[key])] for key, label in (("torch", "torch"), ("nvidia_driver", "NVIDIA driver"),
                                                        ("hl_smi", "Gaudi driver (hl-smi)")) if stack.get(key)]
    commit = run.commit or {}
    if commit.get("id"):
        rows.append(["commit", str(commit["id"])[:12] + (" (uncommitted changes)" if commit.get("dirty") else "")
                     + (f" on {commit['branch']}" if commit.get("branch") else "")])
    if run.datetime:
        rows.append(["run at", run.datetime])
    shares = [s for r in run.records if (s := stall_share(r)) is not None]
    past = [s for s in shares if s > CONTENDED_SHARE]
    span = (f"{min(past):.0%}" if min(past) == max(past) else f"{min(past):.0%}-{max(past):.0%}") if past else ""
    rows.append(["load", "not measured (no Linux PSI, or numbers read from files)" if not shares else
                 f"CPU stall share {len(past)} of {len(shares)} benchmarks past {CONTENDED_SHARE:.0%} ({span}): "
                 "their timing verdicts are inconclusive" if past else f"CPU stall share idle: at most "
                 f"{max(shares):.0%} (under {CONTENDED_SHARE:.0%}) in {len(shares)} benchmarks"])
    return make_table(["machine", ""], rows)


def paper_claims_tables(records: Sequence[Record], claims_by_id: Mapping[str, Any]
                        ) -> tuple[list[tuple[str, Table]], int]:
    """Per paper, one row per claim checked (paper claims first), and the count of not_applicable checks left out."""
    checks = [v for rec in records for v in rec.claims]
    by_claim = group_by((v for v in checks if v.get("verdict") != "not_applicable"), lambda v: str(v.get("id", "?")))
    papers: dict[str, list[list[str]]] = {}
    for cid, verdicts in by_claim.items():
        claim = claims_by_id.get(cid)
        paper = getattr(claim, "paper", None) or (cid[0] if cid[:1] in ("A", "B") else "?")
        counts = sorted(Counter(str(v.get("verdict", "?")) for v in verdicts).items(),
                        key=lambda vn: _VERDICT_ORDER.get(vn[0], 3))
        words = getattr(claim, "paper_text", "") if getattr(claim, "basis", "paper") == "paper" else ""
        papers.setdefault(paper, []).append([cid, getattr(claim, "basis", "—"),
                                             ", ".join(f"{v} {n}" for v, n in counts), words or "—"])
    order = {"paper": 0, "physics": 1, "target": 2, "reference": 3}
    folded = sum(v.get("verdict") == "not_applicable" for v in checks)
    headers = ["claim", "basis", "verdicts", "the paper's words"]
    return [(f"Paper {p}", make_table(headers, sorted(rows, key=lambda r: (order.get(r[1], 4), r[0]))))
            for p, rows in sorted(papers.items())], folded


def undecided_reasons(records: Sequence[Record]) -> list[str]:
    """One line per inconclusive claim and reason, for the first screen."""
    reasons: Counter[tuple[str, str]] = Counter()
    for v in (v for rec in records for v in rec.claims if v.get("verdict") == "inconclusive"):
        cid = str(v.get("id", "?"))
        if isinstance(ci := v.get("interval"), Mapping) and ci.get("lo") is not None and ci.get("hi") is not None:
            level = ci.get("level")
            why = (f"measured {_num(v.get('measured'))}, "
                   + (f"{level:.0%} " if isinstance(level, (int, float)) else "")
                   + f"interval [{_num(ci['lo'])}, {_num(ci['hi'])}]"
                   + (f" (n={ci['n']})" if ci.get("n") is not None else "")
                   + f" straddles {bound_text(v.get('min'), v.get('max'), symbols=True)}")
        else:  # another reason (a contended timing, too few rounds): the check's own words
            why = str(v.get("message", "no reason recorded")).removeprefix(f"claim {cid}: ")
        reasons[(cid, why)] += 1
    return [f"{cid}{f' ({n} benchmarks)' if n > 1 else ''}: {why}" for (cid, why), n in sorted(reasons.items())]


def claims_tables(records: Sequence[Record], claims_by_id: Mapping[str, Any] | None = None
                  ) -> list[tuple[str, Table]]:
    """The claims checked in a run, one ``(test function, table)`` each; a too-wide table shortens benchmark names."""
    from pytest_genai.claims.check import contended_share

    claims_by_id = claims_by_id or {}
    by_test = group_by(((rec, v) for rec in records for v in rec.claims  # not_applicable: counted per paper
                        if v.get("verdict") != "not_applicable"), lambda pair: pair[0].name.split("[", 1)[0])
    headers = ["claim", "benchmark", "device", "value", "bound", "paper value", "source", "verdict"]
    numeric = [False, False, False, True, False, True, False, False]
    out = []
    for test, pairs in by_test.items():
        rows = []
        for rec, v in pairs:
            claim = claims_by_id.get(str(v.get("id", "?")))
            paper_value = v.get("paper")  # the recorder stores the claim's paper value under "paper"
            basis = getattr(claim, "basis", "paper")
            # the CPU-stall share where a timing (or unknown) claim's benchmark was contended
            stall = contended_share(rec.attachments) if getattr(claim, "timing", True) else None
            rows.append(_claim_cells(rec, v) + [
                _num(getattr(claim, "paper_value", None) if paper_value is None else paper_value),
                "—" if claim is None else str(getattr(claim, "source", "") if basis == "paper" else basis),
                str(v.get("verdict", "?")) + ("" if stall is None else f" (CPU stall {stall:.0%})")])

        def relabeled(labels: Sequence[str]) -> Table:
            return make_table(headers, [[row[0], label, *row[2:]] for row, label in zip(rows, labels)], numeric)

        table = make_table(headers, rows, numeric)
        if table.markdown_width() > MAX_ROW_CHARS:
            params = [r.name[len(test) + 1:-1] if r.name.startswith(test + "[") else r.name for r, _ in pairs]
            for labels in (params, distinct_parts(params)):
                table = relabeled(labels)
                if table.markdown_width() <= MAX_ROW_CHARS:
                    break
            else:
                room = max(12, MAX_ROW_CHARS - (table.markdown_width() - max(len(x) for x in labels)))
                table = relabeled(shorten_unique(labels, room))
        out.append((test, table))
    return out


def _claim_cells(rec: Record, verdict: Mapping[str, Any]) -> list[str]:
    """A claim row's claim, benchmark, device, value (with its interval) and bound cells."""
    metric = str(verdict.get("metric") or "")
    value = _num(verdict.get("measured")) + modeled_mark(metric, rec.sources.get(metric))
    iv = verdict.get("interval")
    if isinstance(iv, Mapping) and all(isinstance(iv.get(k), (int, float)) for k in ("lo", "hi")):
        value += f" [{_num(iv['lo'])}, {_num(iv['hi'])}]"
    return [str(verdict.get("id", "?")), rec.label, device_text(rec), value,
            bound_text(verdict.get("min"), verdict.get("max"), symbols=True)]


def _num(x: Any) -> str:
    return str(x) if isinstance(x, bool) else format_number(x)  # a bool reads True/False, not yes/no


def value_key(value: Any) -> str:
    """A config value's full text, to tell values apart (cells and tick labels may be shortened)."""
    return json.dumps(value, sort_keys=True, default=str)


def display_config(rec: Record) -> dict[str, Any]:
    """A record's identity as tables show it: the data's keys folded into one ``data`` entry, never a local path."""
    label = data_label(rec.config, rec.environment)
    keys = list(rec.config)  # the label goes where the first data key was, else after the task
    at = next((i for i, k in enumerate(keys) if k in _DATA_KEYS),
              keys.index("task") + 1 if "task" in keys else len(keys))
    # a config "model" naming the record's model reads as the model column does
    items = [(k, rec.model_label if k == "model" and v == rec.model else config_value_label(k, v))
             for k, v in rec.config.items() if k not in _DATA_KEYS]
    if label is not None:
        items.insert(at, ("data" if "data" not in rec.config else "data_identity", label))
    return dict(items)


@dataclasses.dataclass(frozen=True)
class ExperimentTables:
    """The results of one test function of one experiment, split over tables a CI comment can show."""

    experiment: str
    test: str
    shared: str
    tables: tuple[Table, ...]
    constant: str = ""  # metrics with one value in every row, shown once


def _ordered(keys: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(k for group in keys for k in group))


def _metric_header(m: str, recs: Sequence[Record], info: Mapping[str, MetricInfo]) -> str:
    unit = info[m].unit if m in info and info[m].unit else next((r.units[m] for r in recs if m in r.units), "")
    head = with_unit(m, unit)
    if any(r.sources.get(m) == "modeled" for r in recs if m in r.metrics):
        head += modeled_mark(m, "modeled")
    elif any(f"{m}_modeled" in r.metrics for r in recs):  # elementwise_flops=0 beside elementwise_flops_modeled
        source = next((r.sources[m] for r in recs if r.sources.get(m)), "measured")
        head += f" ({source}{': matrix products only' if m.endswith('flops') else ''})"
    return head


def _metric_cell(m: str, recs: Sequence[Record]) -> Callable[[Record], str]:
    if m.endswith(FLAG_METRIC_SUFFIXES) and {r.metrics[m] for r in recs if m in r.metrics} <= {0.0, 1.0}:
        return lambda r: "—" if m not in r.metrics else ("yes" if r.metrics[m] else "no")
    return lambda r: format_number(r.metrics.get(m))


def distinguishing_keys(recs: Sequence[Record], facts: Callable[[Record], Mapping[str, Any]],
                       fixed: Sequence[str] = (), prefer: Sequence[str] = ()) -> list[str]:
    """The fewest keys of ``facts(record)`` that, with ``fixed``, tell ``recs`` apart as all do (greedy)."""
    table = [{k: value_key(v) for k, v in facts(r).items()} for r in recs]

    def groups(keys: Sequence[str]) -> int:
        return len({tuple(row.get(k, "") for k in keys) for row in table})

    order = list(dict.fromkeys([*prefer, *(k for row in table for k in row)]))
    candidates = [k for k in order if k not in fixed and len({row.get(k, "") for row in table}) > 1]
    target = groups([*fixed, *candidates])
    chosen: list[str] = []
    while groups([*fixed, *chosen]) < target:
        best = max(candidates, key=lambda k: (groups([*fixed, *chosen, k]), -candidates.index(k)))
        chosen.append(best)
        candidates.remove(best)
    return chosen


def _config_cell(shown: Mapping[int, Mapping[str, Any]], key: str) -> Callable[[Record], str]:
    return lambda r: format_value(shown[id(r)].get(key, "—"))


def _identity(recs: Sequence[Record], shown: Mapping[int, Mapping[str, Any]], varying: Sequence[str],
              fixed: Sequence[str]) -> tuple[list[tuple[str, Callable[[Record], str]]], list[str]]:
    """The columns naming each row (a short config ``id``, else the fewest varying keys), and the other varying keys."""
    keys = [p for p in varying if p != "id"  # a config "model" equal to the model column is not shown twice
            and not (p in fixed and all(_config_cell(shown, p)(r) == _NAMED[p](r) for r in recs))]
    # the ids name the rows only when they tell them apart (two configs can share an id that leaves out a key)
    if len(recs) > 1 and all("id" in r.config for r in recs) and len({str(r.config["id"]) for r in recs}) == len(
            {(device_text(r), r.model, *(value_key(shown[id(r)].get(k, "—")) for k in keys)) for r in recs}):
        ids = distinct_parts([str(r.config["id"]) for r in recs])
        by_record = {id(r): i for r, i in zip(recs, ids)}
        if max(len(i) for i in ids) <= MAX_ID_CHARS or not keys:
            return [("id", lambda r: shorten(by_record[id(r)], 2 * MAX_ID_CHARS))], []

    naming = distinguishing_keys(recs, lambda r: {**{h: get(r) for h, get in _NAMED.items()},
                                                  **{k: shown[id(r)].get(k, "—") for k in keys}}, fixed) if keys else []
    naming = [k for k in keys if k in naming]  # config order
    return [(p, _config_cell(shown, p)) for p in naming], [k for k in keys if k not in naming]


def _width(head: str, get: Callable[[Record], str], recs: Sequence[Record]) -> int:
    return max(3, len(head), *(len(get(r)) for r in recs)) + 3


def _pack(identity_width: int, values: Sequence[Column], recs: Sequence[Record]) -> list[list[Column]]:
    """Value columns in groups that fit beside the identity columns, a family (``matmul_*``) kept whole if it fits."""
    chunks: list[list[Column]] = []
    width = identity_width
    widths = [_width(h, get, recs) for h, _, get in values]
    families = [h.split("_", 1)[0] for h, _, _ in values]
    for i, column in enumerate(values):
        family = [widths[j] for j in range(i, len(values)) if families[j] == families[i]]
        keep_whole = ((i == 0 or families[i - 1] != families[i]) and len(family) > 2
                      and identity_width + sum(family) <= MAX_ROW_CHARS)
        if (not chunks or len(chunks[-1]) >= MAX_VALUE_COLUMNS or width + widths[i] > MAX_ROW_CHARS
                or (keep_whole and width + sum(family) > MAX_ROW_CHARS)):
            chunks.append([])
            width = identity_width
        chunks[-1].append(column)
        width += widths[i]
    return chunks or [[]]


def _transposed(recs: Sequence[Record], shown: Mapping[int, Mapping[str, Any]], varying: Sequence[str],
                values: Sequence[Column]) -> Table:
    """One column per record, headed by the fewest config values that tell them apart; a row per key or metric."""
    def facts(r: Record) -> dict[str, Any]:
        return {**{h: get(r) for h, get in _NAMED.items()}, **{k: v for k, v in shown[id(r)].items() if k != "id"}}

    keys = distinguishing_keys(recs, facts) if len(recs) > 1 else []
    heads = [" ".join(dict.fromkeys(format_value(facts(r).get(k, "—")) for k in keys)) for r in recs]
    if len(set(heads)) < len(recs):  # nothing tells them apart but their ids
        keys, heads = ["id"], distinct_parts([str(r.config.get("id", r.name)) for r in recs])
    other = [k for k in ("device", "model", *varying) if k not in keys and k != "id"
             and len({value_key(facts(r).get(k, "—")) for r in recs}) > 1]
    rows = [[k] + [format_value(facts(r).get(k, "—")) for r in recs] for k in other]
    # a config key already shown (in the head or as a row above) is not repeated by the value columns
    rows += [[head] + [get(r) for r in recs] for head, _, get in values if head not in other and head not in keys]
    first = " / ".join(keys) if keys else "metric"
    return make_table([first] + [shorten(h, 24) for h in (heads if keys else ["value"])], rows,
                      [False] + [True] * len(recs))


def experiment_tables(records: Sequence[Record], info: Mapping[str, MetricInfo]) -> list[ExperimentTables]:
    """Per (experiment, test function), tables no wider than :data:`MAX_ROW_CHARS`; shared values stated once."""
    groups = group_by(records, lambda r: (r.experiment or "pytest-benchmark", r.name.split("[", 1)[0]))
    out = []
    for (exp, test), recs in groups.items():
        shown = {id(r): display_config(r) for r in recs}
        params = _ordered(shown[id(r)] for r in recs)
        varying = [p for p in params if len({value_key(shown[id(r)].get(p, "—")) for r in recs}) > 1]
        shared = [f"{p}={format_value(shown[id(recs[0])].get(p))}" for p in params if p not in varying and p != "id"]
        identity = [(head, get) for head, get in _NAMED.items() if len({get(r) for r in recs}) > 1]
        shared = [f"{head}={get(recs[0])}" for head, get in _NAMED.items() if (head, get) not in identity] + shared
        naming, extra = _identity(recs, shown, varying, [h for h, _ in identity])
        identity = identity + naming or [("benchmark", lambda r: shorten(r.name))]
        metrics = _ordered(r.metrics for r in recs)
        # short labels (bound: memory) are columns; long descriptive ones stay in the JSON; a label repeating a
        # config value (strategy) is not shown twice
        labels = [k for k in _ordered(r.labels for r in recs)
                  if all(len(r.labels.get(k, "")) <= MAX_LABEL_CHARS for r in recs)
                  and not all(k in shown[id(r)] and r.labels.get(k) == format_value(shown[id(r)][k]) for r in recs)]
        values: list[Column] = [(k, False, _config_cell(shown, k)) for k in extra] + [
            (_metric_header(m, recs, info), True, _metric_cell(m, recs)) for m in metrics
        ] + [(k, False, lambda r, k=k: r.labels.get(k, "—")) for k in labels]
        same: list[str] = []
        if len(recs) >= 3:
            one = [(h, n, get) for h, n, get in values if len({get(r) for r in recs}) == 1 and get(recs[0]) != "—"]
            values = [v for v in values if v not in one]
            config = shown[id(recs[0])]  # a metric repeating a config value (world_size) is not shown twice
            same = [_constant_text(h, get(recs[0])) for h, _, get in one
                    if format_value(config.get(h.split(" ", 1)[0], "—")) != get(recs[0])]
        identity_width = sum(_width(h, get, recs) for h, get in identity) + 1
        chunks = _pack(identity_width, values, recs)
        turn = (len(chunks) > 1 or (len(recs) == 1 and len(values) > 2)) and len(recs) <= MAX_TRANSPOSED_RECORDS
        turned = _transposed(recs, shown, varying, values) if turn else None
        if turned is not None and turned.markdown_width() <= MAX_ROW_CHARS:
            tables = [turned]
        else:
            tables = [make_table([h for h, _ in identity] + [h for h, _, _ in chunk],
                                 [[get(r) for _, get in identity] + [get(r) for _, _, get in chunk] for r in recs],
                                 [False] * len(identity) + [n for _, n, _ in chunk]) for chunk in chunks]
        out.append(ExperimentTables(exp, test, ", ".join(shared), tuple(tables), ", ".join(same)))
    return out


def _constant_text(header: str, value: str) -> str:
    """``name [unit]`` and ``value`` as ``name=value unit``, no-break spaces keeping a value with its unit."""
    name, _, tail = header.partition(" [")
    unit, _, rest = tail.partition("]")
    return "\u00a0".join(x for x in (f"{name}={value}", unit, rest.strip()) if x)
