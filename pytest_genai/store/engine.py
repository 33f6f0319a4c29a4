"""Opening a store: the engine, SQLite's WAL journal and lock waits, retries, and the schema-version check.

SQLite: the journal is WAL (readers never block the writer), every transaction starts ``BEGIN IMMEDIATE`` (it takes
the write lock up front, so two writers queue instead of failing on a lock upgrade), a busy writer is waited for
(``busy_timeout``) and a unit of work that still meets a locked database is retried from its start
(:meth:`Store.transaction`). Any other SQLAlchemy URL (PostgreSQL for a team) is used as given.
"""
from __future__ import annotations

import datetime
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from pytest_genai import __version__

from .errors import StoreError
from .location import is_sqlite, shown_url
from .schema import MIGRATIONS, SCHEMA_VERSION, tables

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer waits for another one before its unit of work is retried."""
RETRIES = 8
"""Attempts of one unit of work on a locked SQLite database (with growing, jittered pauses)."""


def _sqlalchemy() -> Any:
    try:
        import sqlalchemy
    except ImportError:
        raise StoreError("the results store needs SQLAlchemy: pip install 'pytest-genai[store]' (or pip install "
                         "sqlalchemy; plus psycopg for PostgreSQL)") from None
    return sqlalchemy


def _sqlite_setup(engine: Any) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy issues BEGIN itself (below), pysqlite must not
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable at each checkpoint, never corrupt
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _locked(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in text or "database is busy" in text or "deadlock detected" in text \
        or "could not serialize" in text


@dataclass
class Store:
    """An open store: ``engine`` and ``md`` (the tables); work goes through :meth:`transaction`."""

    url: str
    engine: Any
    md: Any

    @property
    def shown(self) -> str:
        return shown_url(self.url)

    def table(self, name: str) -> Any:
        return self.md.tables[name]

    def transaction(self, work: Callable[[Any], T], retries: int = RETRIES) -> T:
        """``work(connection)`` in one transaction: all of it is committed, or (an error, a killed process) none.
        Retried from the start while the database is locked by another writer."""
        from sqlalchemy.exc import OperationalError

        for attempt in range(retries):
            try:
                with self.engine.begin() as conn:
                    return work(conn)
            except OperationalError as exc:
                if not _locked(exc) or attempt == retries - 1:
                    raise StoreError(f"store {self.shown}: {getattr(exc, 'orig', exc)}") from None
                time.sleep(min(5.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def open_store(url: str, *, create: bool = True) -> Store:
    """Open (and, with ``create``, create or upgrade) the store at ``url``; :class:`StoreError` naming it when it
    cannot be reached or has a layout this version does not know."""
    sa = _sqlalchemy()
    shown = shown_url(url)
    if is_sqlite(url):
        path = url.split(":///", 1)[-1]
        if path and path != ":memory:" and not path.startswith("file:"):
            folder = Path(path).parent
            if not folder.exists():
                if not create:
                    raise StoreError(f"store {shown}: no such database; add runs with `pytest-genai store add RUN.json`")
                folder.mkdir(parents=True, exist_ok=True)
            elif not create and not Path(path).exists():
                raise StoreError(f"store {shown}: no such database; add runs with `pytest-genai store add RUN.json`")
    try:
        engine = sa.create_engine(url, future=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
        raise StoreError(f"store {shown}: not a usable database URL ({exc}); give sqlite:///PATH, "
                         "postgresql+psycopg://USER@HOST/DB, or a file path") from None
    if is_sqlite(url):
        _sqlite_setup(engine)
    store = Store(url, engine, tables())
    for attempt in (1, 2):  # a second process creating the same new store at once (PostgreSQL): check again
        try:
            store.transaction(lambda conn: _check_schema(store, conn, create))
            return store
        except sa.exc.DBAPIError as exc:
            if attempt == 2 or isinstance(exc, sa.exc.OperationalError):
                engine.dispose()
                raise StoreError(f"store {shown}: cannot be opened: {str(getattr(exc, 'orig', exc)).strip()}") from None
        except StoreError:
            engine.dispose()
            raise
    raise AssertionError("unreachable")


def stored_version(conn: Any, md: Any) -> int | None:
    """The database's ``schema_version`` (None: no store tables yet)."""
    from sqlalchemy import inspect, select

    if not inspect(conn).has_table("store_meta"):
        return None
    meta = md.tables["store_meta"]
    row = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).first()
    return int(row[0]) if row else None


def _check_schema(store: Store, conn: Any, create: bool) -> None:
    version = stored_version(conn, store.md)
    if version is None:
        if not create:
            raise StoreError(f"store {store.shown}: holds no pytest-genai store; add runs with `pytest-genai store add`")
        store.md.create_all(conn)
        meta = store.table("store_meta")
        conn.execute(meta.insert(), [{"key": "schema_version", "value": str(SCHEMA_VERSION)},
                                     {"key": "created_by", "value": f"pytest-genai {__version__}"},
                                     {"key": "created_time", "value": utc_now()}])
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store {store.shown}: has schema version {version}, but this pytest-genai ({__version__}) knows versions "
            f"up to {SCHEMA_VERSION}; a newer pytest-genai wrote it — upgrade pytest-genai (pip install -U "
            "pytest-genai) to read or add to it, or give another store (--store URL)")
    if version == SCHEMA_VERSION:
        return
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise StoreError(f"store {store.shown}: schema version {version} has no migration to {version + 1} in "
                             f"pytest-genai {__version__}; open it with the version that wrote it")
        step(conn)
        version += 1
    meta = store.table("store_meta")
    from sqlalchemy import update

    conn.execute(update(meta).where(meta.c.key == "schema_version").values(value=str(version)))
