"""Adding runs: one transaction per run (a killed import leaves the store as it was), keyed by the document's
content hash (adding a run again is a no-op, also when two processes add it at once)."""
from __future__ import annotations

import json
import os
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from pytest_genai.results.errors import ReportInputError

from .engine import Store, utc_now
from .errors import StoreError
from .ingest import RunRows, canonical, claim_numbers, run_rows


@dataclass(frozen=True)
class Added:
    source: str
    run_id: int
    new: bool  # False: the store already held this run
    rows: int


class RowRejected(StoreError):
    """A value the store's columns cannot hold (too long, or a NUL character); raised before anything is written."""


def check_columns(table: Any, rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a text value longer than its column or holding a NUL, the same on every back end."""
    for row in rows:
        for key, value in row.items():
            if not isinstance(value, str):
                continue
            where = f"{table.name}.{key}"
            shown = value if len(value) <= 60 else value[:40] + "..."
            if "\x00" in value:
                raise RowRejected(f"{where} {shown!r} holds a NUL character, which the store cannot keep; "
                                  "remove it from the name or value in the run")
            limit = getattr(table.c[key].type, "length", None)
            if limit is not None and len(value) > limit:
                raise RowRejected(f"{where} {shown!r} is {len(value)} characters, longer than the {limit} the store "
                                  f"holds; shorten it in the run (at most {limit} characters)")


def _device_id(conn: Any, store: Store, key: tuple[str, str, str], known: dict[tuple[str, str, str], int]) -> int:
    """The ``devices`` row id of (kind, generation, name), added when new; ``known`` caches ids per transaction."""
    from sqlalchemy import select

    if key not in known:
        t = store.table("devices")
        ident = dict(zip(("kind", "generation", "name"), key))
        check_columns(t, [ident])  # before the lookup: it sends them
        found = conn.execute(select(t.c.id).where(*(t.c[k] == v for k, v in ident.items()))).scalar()
        if found is None:
            found = conn.execute(t.insert().values(**ident)).inserted_primary_key[0]
        known[key] = int(found)
    return known[key]


def _put(conn: Any, store: Store, name: str, rows: list[dict[str, Any]]) -> None:
    """Check, then insert ``rows`` into table ``name`` with one executemany (an INSERT per row is slow)."""
    check_columns(store.table(name), rows)
    if rows:
        conn.execute(store.table(name).insert(), rows)


def _insert(conn: Any, store: Store, rows: RunRows) -> tuple[int, bool]:
    from sqlalchemy import select

    runs = store.table("runs")
    existing = conn.execute(select(runs.c.id).where(runs.c.content_hash == rows.content_hash)).scalar()
    if existing is not None:
        return int(existing), False
    check_columns(runs, [rows.run])
    run_id = int(conn.execute(runs.insert().values(content_hash=rows.content_hash, added_time=utc_now(),
                                                   **rows.run)).inserted_primary_key[0])
    known: dict[tuple[str, str, str], int] = {}
    _put(conn, store, "run_devices", [
        {"run_id": run_id, "position": i, "spec_source": d["spec_source"], "spec_json": d["spec_json"],
         "device_id": _device_id(conn, store, (d["kind"], d["generation"], d["name"]), known)}
        for i, d in enumerate(rows.devices)])
    bench_rows = [dict(
        run_id=run_id, position=position, name=rec.name, fullname=rec.fullname, param=rec.param,
        experiment=rec.experiment, model=rec.model,
        config_id=rec.config.get("id") if isinstance(rec.config.get("id"), str) else rec.param,
        config_json=canonical(rec.config),
        device_id=None if rec.device is None else _device_id(conn, store, astuple(rec.device), known),
        **{f"{k}_json": canonical(getattr(rec, k)) if getattr(rec, k) else None
           for k in ("environment", "labels", "attachments", "timing")})
        for position, rec in enumerate(rows.benchmarks)]
    _put(conn, store, "benchmarks", bench_rows)
    t = store.table("benchmarks")  # the new ids by position
    ids = conn.execute(select(t.c.id).where(t.c.run_id == run_id).order_by(t.c.position)).scalars().all() \
        if bench_rows else []
    _put(conn, store, "metrics", [{"benchmark_id": ids[i], **m} for i, m in rows.metrics])
    # by position: one node id may name two benchmarks (one test on two devices)
    _put(conn, store, "claims", [{
        "run_id": run_id, "benchmark_id": None if i is None else int(ids[i]), "claim_id": str(claim.get("id", "")),
        **dict(zip(("measured", "bound_min", "bound_max", "paper"),
                   claim_numbers(claim, ("measured", "min", "max", "paper")))),
        # a JSON list or object where text belongs is stored as its JSON
        **{k: v if (v := claim.get(k)) is None or isinstance(v, str) else canonical(v)
           for k in ("metric", "verdict", "basis", "message")},
        "interval_json": canonical(claim["interval"]) if isinstance(claim.get("interval"), dict) else None}
        for i, claim in rows.claims])
    return run_id, True


def add_document(store: Store, doc: Any, source: str, command: str | None = None) -> Added:
    """Add one parsed pytest-benchmark JSON document (a no-op when the store holds it already)."""
    return add_rows(store, run_rows(doc, source, command), source)


def add_rows(store: Store, rows: RunRows, source: str) -> Added:
    """Add a run's rows (:func:`read_rows`, :func:`~.ingest.run_rows`): one transaction."""
    from sqlalchemy.exc import IntegrityError

    try:
        run_id, new = store.transaction(lambda conn: _insert(conn, store, rows))
    except RowRejected as exc:  # nothing was written: the transaction rolled back
        raise RowRejected(f"{source}: {exc}") from None
    except IntegrityError:  # another process added the same run between our check and insert (PostgreSQL)
        run_id, new = store.transaction(lambda conn: _insert(conn, store, rows))
    return Added(source, run_id, new, rows.row_count)


def read_rows(path: str | os.PathLike[str], command: str | None = None) -> RunRows:
    """The run file ``path`` as the store's rows, validated as ``pytest-genai report`` reads it; read once (a pipe)."""
    from pytest_genai.results.runs import load_run, run_from_bytes

    try:
        raw = Path(path).read_bytes()
    except OSError:
        load_run(path)  # its message names the file and what is wrong with it
        raise
    run_from_bytes(raw, path)  # the same parse below then succeeds
    return run_rows(json.loads(raw.decode("utf-8-sig")), os.path.basename(path), command)


def add_file(store: Store, path: str | os.PathLike[str], command: str | None = None) -> Added:
    """Add the run file ``path``."""
    return add_rows(store, read_rows(path, command), os.path.basename(path))


def run_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Each path, a folder expanded to the JSON runs under it in name order; a missing path is an error naming it."""
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.json") if q.is_file())
            if not found:
                raise StoreError(f"{p}: a folder with no .json run files under it; give --benchmark-json files or "
                                 "pytest-benchmark's storage folder (.benchmarks)")
            yield from found
        elif p.exists():
            yield p
        else:
            raise ReportInputError(f"{p}: no such file or folder (give --benchmark-json files or a .benchmarks folder)")
