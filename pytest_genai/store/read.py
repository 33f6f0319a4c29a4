"""Queries: the runs a query names, a stored run as a :class:`~pytest_genai.results.runs.Run` (compared as a file is),
one metric's series. A query: ``key=value`` filters and one of ``latest`` (default), ``best``, ``last:N``, e.g.
``generation=a100 latest``, ``experiment=quant model=smollm2-135m best``, ``generation=h100 last:5``."""
from __future__ import annotations

import dataclasses
import datetime
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pytest_genai.results.runs import BENCH_MEDIAN_METRIC, DeviceRef, Record, Run, interval_ends

from .engine import Store
from .errors import StoreError

BENCHMARK_FILTERS = ("generation", "kind", "device", "experiment", "model", "config")
RUN_FILTERS = ("run", "commit", "branch", "scale", "node")
SELECTORS = ("latest", "best")
LAST = "last:"
PREFIX = "store:"
MIXED = "mixed"
CORRUPT = "the store row is corrupt: remove the run and add its file again"


@dataclass(frozen=True)
class StoreQuery:
    filters: tuple[tuple[str, str], ...]
    selector: str = "latest"
    mixed: bool = False  # ``last:N mixed``: the runs may come from different device models

    @property
    def text(self) -> str:
        return " ".join([f"{k}={v}" for k, v in self.filters] + [self.selector] + ([MIXED] if self.mixed else []))


def parse_query(text: str) -> StoreQuery:
    """``"generation=a100 latest"`` -> :class:`StoreQuery`; an unknown key or word is an error naming the choices."""
    body = text.strip().removeprefix(PREFIX)
    filters: list[tuple[str, str]] = []
    selectors: list[str] = []
    mixed = False
    for word in body.split():
        key, eq, value = word.partition("=")
        if eq:
            key = key.strip().lower()
            if key not in BENCHMARK_FILTERS + RUN_FILTERS or not value:
                raise StoreError(f"store query {text!r}: {word!r} is not a filter; use key=value with a key among "
                                 f"{', '.join(BENCHMARK_FILTERS + RUN_FILTERS)}")
            filters.append((key, value))
        elif word.lower() in SELECTORS:
            selectors.append(word.lower())
        elif word.lower() == MIXED:
            mixed = True
        elif word.lower().startswith(LAST):
            count = word[len(LAST):]
            if not (count.isascii() and count.isdigit()) or int(count) < 1:
                raise StoreError(f"store query {text!r}: {word!r} asks for no run; give last:N with N >= 1 runs "
                                 "(five or more let a timing row be decided against their spread), e.g. last:5")
            selectors.append(f"{LAST}{int(count)}")
        else:
            raise StoreError(f"store query {text!r}: {word!r} is neither key=value nor one of "
                             f"{', '.join(SELECTORS)}, last:N")
    if len(selectors) > 1:
        raise StoreError(f"store query {text!r}: give one of {', '.join(SELECTORS)} or last:N, not several")
    selector = selectors[0] if selectors else "latest"
    if mixed and not selector.startswith(LAST):
        raise StoreError(f"store query {text!r}: 'mixed' is for a baseline of several runs (last:N mixed)")
    return StoreQuery(tuple(filters), selector, mixed)


def looks_like_query(text: str) -> bool:
    """Does ``text`` read as a store query (``store:...``, a ``key=value`` word, or only ``latest``/``best``)?"""
    words = text.strip().split()
    return bool(words) and (text.strip().startswith(PREFIX) or all(
        "=" in w or w.lower() in SELECTORS + (MIXED,) or w.lower().startswith(LAST) for w in words))


def _where(store: Store, query: StoreQuery, runs: bool = True) -> list[Any]:
    """The SQL conditions of ``query``'s filters on :func:`_joined` (``runs=False``: its benchmark filters only)."""
    r, b, d = (store.table(n) for n in ("runs", "benchmarks", "devices"))
    columns = {"generation": d.c.generation, "kind": d.c.kind, "device": d.c.name, "experiment": b.c.experiment,
               "model": b.c.model, "config": b.c.config_id, "branch": r.c.branch, "scale": r.c.scale, "node": r.c.node}
    out = []
    for key, value in query.filters:
        if key == "run" and runs:
            if not (value.isascii() and value.isdigit()):
                raise StoreError(f"store query {query.text!r}: run={value} is not a run id (an integer; "
                                 "`pytest-genai store list` shows them)")
            out.append(r.c.id == int(value))
        elif key == "commit" and runs:
            out.append(r.c.commit_id.startswith(value, autoescape=True))  # a literal prefix: never LIKE wildcards
        elif key in columns and (runs or key in BENCHMARK_FILTERS):
            out.append(columns[key] == value)
    return out


def _joined(store: Store, table: Any = None) -> Any:
    """``table`` (default: benchmarks) joined to its benchmark's run and device, the columns :func:`_where` names."""
    r, b, d = (store.table(n) for n in ("runs", "benchmarks", "devices"))
    base = b if table is None else table.join(b, b.c.id == table.c.benchmark_id)
    return base.join(r, r.c.id == b.c.run_id).outerjoin(d, d.c.id == b.c.device_id)


def parse_time(text: str | None) -> datetime.datetime | None:
    """An ISO 8601 time as a datetime; None where none or unreadable."""
    try:
        return datetime.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def time_key(text: str | None) -> float:
    """An ISO 8601 run time as epoch seconds, for ordering runs across offsets (no offset: UTC; unreadable: oldest)."""
    if (when := parse_time(text and text.strip())) is None:
        return -math.inf
    return (when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)).timestamp()


def matching_runs(store: Store, query: StoreQuery) -> list[int]:
    """Ids of the runs with a benchmark matching ``query``, newest first (run time, then id)."""
    from sqlalchemy import select

    r = store.table("runs")
    stmt = select(r.c.id, r.c.run_time).distinct().select_from(_joined(store)).where(*_where(store, query))
    rows = store.read(lambda conn: conn.execute(stmt).all())
    rows.sort(key=lambda row: (time_key(row.run_time), row.id), reverse=True)
    return [row.id for row in rows]


def _loads(text: str | None, where: str, kind: type) -> Any:
    """A stored JSON field (``{}`` where empty); invalid JSON or not a ``kind`` is a :class:`StoreError`."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{where}: not valid JSON ({exc}); the store row is corrupt: remove the run "
                         "(`pytest-genai store rm`) and add its file again") from None
    if not isinstance(value, kind):
        raise StoreError(f"{where}: holds a JSON {type(value).__name__}, expected a {kind.__name__}; {CORRUPT}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreError(f"{where}: {value!r} is not a number; {CORRUPT}")
    return float(value)


def stored_run(store: Store, run_id: int, query: StoreQuery | None = None) -> Run:
    """Run ``run_id`` as a :class:`Run` (only the benchmarks ``query``'s benchmark filters keep)."""
    from sqlalchemy import select

    r, b, d, m, c, rd = (store.table(n) for n in ("runs", "benchmarks", "devices", "metrics", "claims", "run_devices"))
    where = _where(store, query, runs=False) if query else []

    def read(conn: Any) -> Run:
        run = conn.execute(select(r).where(r.c.id == run_id)).first()
        if run is None:
            raise StoreError(f"store {store.shown}: no run {run_id}")
        benches = conn.execute(select(b, d.c.kind, d.c.generation, d.c.name.label("device_name"))
                               .select_from(b.outerjoin(d, d.c.id == b.c.device_id))
                               .where(b.c.run_id == run_id, *where).order_by(b.c.position)).all()
        ids = [row.id for row in benches]
        rows: dict[Any, dict[int, list[Any]]] = {m: {}, c: {}}  # each benchmark's metrics and claims
        for table, into in rows.items() if ids else ():
            for row in conn.execute(select(table).where(table.c.benchmark_id.in_(ids)).order_by(table.c.id)):
                into.setdefault(row.benchmark_id, []).append(row)
        devices = conn.execute(select(rd.c.spec_json, d.c.kind, d.c.generation, d.c.name)
                               .select_from(rd.join(d, d.c.id == rd.c.device_id))
                               .where(rd.c.run_id == run_id).order_by(rd.c.position)).all()
        at = f"store {store.shown}, run {run_id}"
        records = tuple(_record(row, rows[m].get(row.id, []), rows[c].get(row.id, []), at) for row in benches)
        device_json = tuple({"kind": x.kind, "generation": x.generation, "name": x.name,
                             **({"spec": _loads(x.spec_json, f"{at}: device spec", dict)} if x.spec_json else {})}
                            for x in devices)
        label = f"store run {run_id}" + (f" ({query.text})" if query and query.filters else "")
        return Run(label, records, device_json, (), run.run_time, _loads(run.absent_json, f"{at}: absent", dict),
                   _loads(run.stack_json, f"{at}: stack", dict))

    return store.read(read)


def last_runs(store: Store, ids: Sequence[int], count: int, query: StoreQuery) -> Run:
    """The ``count`` newest of the matching runs ``ids`` (newest first) as one baseline; fewer give a warning."""
    from pytest_genai.results.baselines import combine_runs

    chosen = list(ids[:count])
    runs = [stored_run(store, i, query) for i in chosen]
    # a spread between device models is the hardware's, and it would widen every interval
    seen: dict[tuple[Any, ...], dict[str, str]] = {}
    for run, rec in ((run, rec) for run in runs for rec in run.records if rec.device and not query.mixed):
        names = seen.setdefault((rec.key, rec.device.kind, rec.device.generation), {})
        names.setdefault(rec.device.name or "?", run.source)
        if len(names) > 1:
            both = "; ".join(f"{name} ({where})" for name, where in names.items())
            raise StoreError(f"store query {query.text!r}: benchmark {rec.label} ran on different device models "
                             f"in these runs ({both}); add device=NAME to the query to take one model, or the "
                             "word 'mixed' to accept the spread between models")
    combined = combine_runs(runs, f"store runs {', '.join(map(str, chosen))} ({query.text}: {len(chosen)} run(s), "
                                  "newest first)")
    if len(chosen) < count:
        short = (f"store query {query.text!r}: {store.shown} holds {len(chosen)} matching run(s), not {count}; the "
                 f"baseline is run(s) {', '.join(map(str, chosen))}"
                 + (" — one run has no spread between runs, so its rows are judged as against one run"
                    if len(chosen) == 1 else ""))
        combined = dataclasses.replace(combined, warnings=combined.warnings + (short,))
    return combined


def _record(row: Any, metrics: Sequence[Any], claims: Sequence[Any], at: str) -> Record:
    """One stored benchmark as a :class:`Record`, as its file would load; a corrupt row is a :class:`StoreError`."""
    device = None if row.kind is None else DeviceRef(row.kind, row.generation, row.device_name or "")
    where = f"{at}, benchmark {row.name}"
    values, rounds, intervals = {}, {}, {}
    for x in metrics:
        field = f"{where}, metric {x.name}"
        if x.value is None and not x.nonfinite:
            raise StoreError(f"{field}: the stored value is NULL; {CORRUPT}")
        if x.nonfinite and x.nonfinite not in ("nan", "inf", "-inf"):
            raise StoreError(f"{field}: non-finite marker {x.nonfinite!r} is not nan, inf or -inf; the store row "
                             "is corrupt")
        value = _number(x.value, field) if x.value is not None else None
        values[x.name] = float(x.nonfinite) if x.nonfinite else value
        these = tuple(_number(v, f"{field}: a round") for v in _loads(x.rounds_json, f"{field}: rounds", list) or [])
        if len(these) >= 2:
            rounds[x.name] = these
        if ends := interval_ends(_loads(x.interval_json, f"{field}: interval", dict)):  # as the file reader keeps one
            intervals[x.name] = ends
    claimed = tuple({"id": c.claim_id, "metric": c.metric, "measured": c.measured, "min": c.bound_min,
                     "max": c.bound_max, "paper": c.paper, "verdict": c.verdict, "message": c.message, "basis": c.basis,
                     "interval": _loads(c.interval_json, f"store claim {c.claim_id}: interval", dict) or None}
                    for c in claims)
    return Record(
        name=row.name, fullname=row.fullname or row.name, experiment=row.experiment, device=device, model=row.model,
        metrics=values, sources={x.name: x.source for x in metrics if x.source},
        units={x.name: x.unit for x in metrics if x.unit}, claims=claimed, param=row.param, rounds=rounds,
        intervals=intervals, **{k: _loads(getattr(row, f"{k}_json"), f"{where}: {k}", dict)
                                for k in ("config", "labels", "attachments", "environment", "timing")})


def best_run(runs: Sequence[Run], info: Mapping[str, Any], label: str) -> Run:
    """Every benchmark of ``runs`` (newest first), each metric at its best by ``info`` (or newest) with its rounds."""
    chosen: dict[tuple[Any, ...], Record] = {}
    for run in runs:
        for rec in run.records:
            key = (rec.key, None if rec.device is None else (rec.device.kind, rec.device.generation))
            have = chosen.setdefault(key, rec)
            if have is rec:
                continue
            metrics, rounds, timing = dict(have.metrics), dict(have.rounds), have.timing
            for name, value in rec.metrics.items():
                direction = getattr(info.get(name), "direction", None)
                old = metrics.get(name)
                if not (old is None or (isinstance(old, float) and not math.isfinite(old))
                        or (math.isfinite(value) and ((direction == "higher" and value > old)
                                                      or (direction == "lower" and value < old)))):
                    continue
                metrics[name] = value
                if name in rec.rounds:
                    rounds[name] = rec.rounds[name]
                else:
                    rounds.pop(name, None)
                if name == BENCH_MEDIAN_METRIC:
                    timing = rec.timing
            chosen[key] = dataclasses.replace(have, metrics=metrics, rounds=rounds, timing=timing, units={
                **rec.units, **have.units}, sources={**rec.sources, **have.sources})
    newest = runs[0]
    return Run(label, tuple(chosen.values()), newest.devices, (), newest.datetime, newest.absent, newest.stack)


def query_run(store: Store, text: str, info: Mapping[str, Any] | None = None, exclude_hash: str | None = None) -> Run:
    """The run a query names. ``exclude_hash``: leave out the stored copy of the run it is compared with."""
    query = parse_query(text)
    ids = matching_runs(store, query)
    if ids and exclude_hash:
        from sqlalchemy import select

        r = store.table("runs")
        same = set(store.read(lambda conn: conn.execute(
            select(r.c.id).where(r.c.content_hash == exclude_hash)).scalars().all()))
        if not (ids := [i for i in ids if i not in same]):
            raise StoreError(f"store query {query.text!r}: the only run in {store.shown} that matches is the run "
                             f"compared with it (run {min(same)}); add the earlier run to the store or name it")
    if not ids:
        raise StoreError(f"store query {query.text!r}: no run in {store.shown} matches; `pytest-genai store list` "
                         "shows what it holds")
    if query.selector == "latest":
        return stored_run(store, ids[0], query)
    if query.selector.startswith(LAST):
        return last_runs(store, ids, int(query.selector[len(LAST):]), query)
    runs = [stored_run(store, i, query) for i in ids]
    return best_run(runs, info or {}, f"store: {query.text} (best of {len(ids)} run(s): {', '.join(map(str, ids))})")


@dataclass(frozen=True)
class Point:
    run_id: int
    run_time: str | None
    commit: str | None
    kind: str | None
    generation: str | None
    benchmark: str
    config_id: str | None
    model: str | None
    value: float
    unit: str | None
    source: str | None
    rounds: int


@dataclass(frozen=True)
class Bound:
    claim_id: str
    basis: str | None
    low: float | None
    high: float | None
    generation: str | None


def series(store: Store, metric: str, query: StoreQuery) -> tuple[list[Point], list[Bound]]:
    """Every stored value of ``metric`` matching ``query``'s filters (oldest first), and its claims' bounds."""
    from sqlalchemy import select

    r, b, d, m, c = (store.table(n) for n in ("runs", "benchmarks", "devices", "metrics", "claims"))
    where = _where(store, query)
    stmt = (select(r.c.id, r.c.run_time, r.c.commit_id, d.c.kind, d.c.generation, b.c.name, b.c.config_id, b.c.model,
                   m.c.value, m.c.nonfinite, m.c.unit, m.c.source, m.c.rounds_json)
            .select_from(_joined(store, m)).where(m.c.name == metric, *where))
    bounds = (select(c.c.claim_id, c.c.basis, c.c.bound_min, c.c.bound_max, d.c.generation).distinct()
              .select_from(_joined(store, c)).where(c.c.metric == metric, c.c.verdict != "not_applicable", *where))
    rows, claim_rows = store.read(lambda conn: (conn.execute(stmt).all(), conn.execute(bounds).all()))
    points = [Point(*x[:8], float(x.nonfinite) if x.nonfinite else x.value, x.unit, x.source,
                    len(json.loads(x.rounds_json or "[]"))) for x in rows]
    points.sort(key=lambda p: (time_key(p.run_time), p.run_id, p.benchmark))
    return points, [Bound(*x) for x in claim_rows]


def run_summaries(store: Store) -> list[dict[str, Any]]:
    """One line per stored run (newest first): id, time, commit, generations, benchmarks, source."""
    from sqlalchemy import func, select

    r, b, d = (store.table(n) for n in ("runs", "benchmarks", "devices"))
    columns = (r.c.id, r.c.run_time, r.c.commit_id, r.c.scale, r.c.source)
    stmt = select(*columns, func.count(b.c.id).label("n")).select_from(r.outerjoin(b, b.c.run_id == r.c.id))
    gens = select(b.c.run_id, d.c.generation).distinct().select_from(b.join(d, d.c.id == b.c.device_id))
    rows, gen_rows = store.read(lambda conn: (conn.execute(stmt.group_by(*columns)).all(), conn.execute(gens).all()))
    by_run: dict[int, list[str]] = {}
    for x in gen_rows:
        by_run.setdefault(x.run_id, []).append(x.generation)
    out = [{"id": x.id, "time": x.run_time, "commit": (x.commit_id or "")[:12], "scale": x.scale,
            "generations": ",".join(sorted(by_run.get(x.id, []))), "benchmarks": x.n, "source": x.source}
           for x in rows]
    out.sort(key=lambda o: (time_key(o["time"]), o["id"]), reverse=True)
    return out
