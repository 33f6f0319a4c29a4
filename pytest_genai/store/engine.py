"""Opening a store: the engine, WAL, retries, the schema-version check. SQLite writers ``BEGIN IMMEDIATE`` so two
writers queue instead of failing on a lock upgrade; locked work is retried from its start; other databases never
modified."""
from __future__ import annotations

import contextlib
import datetime
import os
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from pytest_genai import __version__

from .errors import StoreError
from .location import check_holds_a_file, is_sqlite, sqlite_file, store_label
from .schema import MIGRATIONS, SCHEMA_VERSION, tables

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000  # a SQLite writer's wait for another before its unit of work is retried
RETRIES = 8  # attempts of one unit of work on a locked database
READ_ONLY = "genai_read_only"  # execution option: a plain, deferred BEGIN
LOCKED = ("database is locked", "database is busy", "deadlock detected", "could not serialize")  # worth a retry


def _sqlite_setup(engine: Any) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy issues BEGIN itself (below), pysqlite must not
        # per-connection settings only: nothing here changes the file; synchronous=NORMAL with WAL: durable at each
        # checkpoint, never corrupt
        for pragma in (f"busy_timeout = {BUSY_TIMEOUT_MS}", "foreign_keys = ON", "synchronous = NORMAL"):
            dbapi_conn.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


def _read_only_engine(sa: Any, path: str) -> Any:
    """An engine reading ``path`` without writing beside it; ``immutable=1`` where no ``-shm`` file can be created."""
    import sqlite3
    from urllib.parse import quote

    immutable = not os.access(os.path.dirname(path), os.W_OK) and not os.path.exists(path + "-wal")
    uri = f"file:{quote(path)}?mode=ro" + ("&immutable=1" if immutable else "")
    return sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
                            poolclass=sa.pool.NullPool, future=True)


@dataclass
class Store(contextlib.AbstractContextManager):
    """An open store: ``engine`` and ``md`` (the tables); work goes through :meth:`transaction`."""

    url: str
    engine: Any
    md: Any
    read_only: bool = False

    @property
    def shown(self) -> str:
        return store_label(self.url)

    def table(self, name: str) -> Any:
        return self.md.tables[name]

    def transaction(self, work: Callable[[Any], T], *, write: bool = True) -> T:
        """``work(connection)`` in one transaction, retried while another writer locks it; ``write=False``: no lock."""
        from sqlalchemy.exc import OperationalError

        if write and self.read_only:
            raise StoreError(f"store {self.shown}: cannot be written (a read-only file, folder or mount); it can "
                             "be read, or give a writable store (--store URL)")
        for attempt in range(RETRIES):
            try:
                with self.engine.connect() as conn:
                    if not write:
                        conn.execution_options(**{READ_ONLY: True})
                    with conn.begin():
                        return work(conn)
            except OperationalError as exc:
                if not any(s in str(exc.orig).lower() for s in LOCKED) or attempt == RETRIES - 1:
                    raise StoreError(f"store {self.shown}: {exc.orig}") from None
                time.sleep(min(5.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def read(self, work: Callable[[Any], T]) -> T:
        """``work(connection)`` in one transaction that only reads: a consistent snapshot, no write lock."""
        return self.transaction(work, write=False)

    def close(self) -> None:
        self.engine.dispose()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def open_store(url: str, *, create: bool = True) -> Store:
    """Open (``create``: create or upgrade) the store at ``url``, else an unwritable file read-only; or a StoreError."""
    try:
        import sqlalchemy as sa
    except ImportError:
        raise StoreError("the results store needs SQLAlchemy: pip install 'pytest-genai[store]' (or pip install "
                         "sqlalchemy; plus psycopg for PostgreSQL)") from None
    check_holds_a_file(url)
    shown = store_label(url)
    path = sqlite_file(url)
    read_only = False
    if path is not None and not path.startswith("file:"):
        folder = Path(path).parent
        if not create and not Path(path).exists():
            raise StoreError(f"store {shown}: no such database; add runs with `pytest-genai store add RUN.json`")
        if not folder.exists():  # a new store's folder (a file there: opening it names the error)
            folder.mkdir(parents=True, exist_ok=True)
        read_only = not create and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK))
    try:
        engine = _read_only_engine(sa, os.path.abspath(path)) if read_only else sa.create_engine(url, future=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
        raise StoreError(f"store {shown}: not a usable database URL ({exc}); give sqlite:///PATH, "
                         "postgresql+psycopg://USER@HOST/DB, or a file path") from None
    if is_sqlite(url):
        _sqlite_setup(engine)
    store = Store(url, engine, tables(), read_only)
    for attempt in (1, 2):  # a second process creating the same new store at once (PostgreSQL): check again
        try:
            # looked at without a write lock; a store to create or upgrade is checked again in the writing transaction
            if not store.read(lambda conn: _check_schema(store, conn, create, write=False)):
                store.transaction(lambda conn: _check_schema(store, conn, create, write=True))
            if create and is_sqlite(url):  # WAL: switched outside any transaction, as SQLite requires; best effort
                # the driver's own error type: busy or locked now; the next writer switches it
                with contextlib.suppress(Exception), contextlib.closing(engine.raw_connection()) as raw:
                    raw.cursor().execute("PRAGMA journal_mode = WAL")
            return store
        except sa.exc.DBAPIError as exc:
            if attempt == 2 or isinstance(exc, sa.exc.OperationalError):
                engine.dispose()
                raise StoreError(f"store {shown}: cannot be opened: {str(getattr(exc, 'orig', exc)).strip()}") from None
        except StoreError:
            engine.dispose()
            raise
    raise AssertionError("unreachable")


def stored_version(conn: Any, md: Any, shown: str = "the store") -> int | None:
    """The database's ``schema_version`` (None: no ``store_meta`` table); a missing or malformed one is an error."""
    from sqlalchemy import inspect, select

    if not inspect(conn).has_table("store_meta"):
        return None
    meta = md.tables["store_meta"]
    row = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).first()
    if row is None:
        raise StoreError(f"store {shown}: its store_meta table has no schema_version row, so its layout is unknown "
                         "(another application's table, or the row was deleted); restore the row (key "
                         f"'schema_version', value '{SCHEMA_VERSION}' for this pytest-genai) or give another store")
    text = str(row[0]).strip()
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise StoreError(f"store {shown}: store_meta.schema_version is {row[0]!r}, not a whole number, so its layout "
                         f"is unknown; set it to the version that wrote the store ('{SCHEMA_VERSION}' for this "
                         "pytest-genai) or give another store")
    return int(text)


def _check_schema(store: Store, conn: Any, create: bool, write: bool) -> bool:
    """Check (``write``: and create or upgrade) the store's layout; False when that needs a writing transaction."""
    from sqlalchemy import inspect

    version = stored_version(conn, store.md, store.shown)
    meta = store.table("store_meta")
    if version is None:
        others = sorted(inspect(conn).get_table_names())
        if others:  # another application's database: never a table of ours in it
            listed = ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6 else "")
            raise StoreError(f"store {store.shown}: is not a pytest-genai store but another database (it holds the "
                             f"tables {listed}); pytest-genai adds nothing to it — give a new file or an empty "
                             "database (--store URL)")
        if not create:
            raise StoreError(f"store {store.shown}: holds no pytest-genai store; add runs with "
                             "`pytest-genai store add`")
        if not write:
            return False
        store.md.create_all(conn)
        conn.execute(meta.insert(), [{"key": "schema_version", "value": str(SCHEMA_VERSION)},
                                     {"key": "created_by", "value": f"pytest-genai {__version__}"},
                                     {"key": "created_time", "value": utc_now()}])
        return True
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store {store.shown}: has schema version {version}, but this pytest-genai ({__version__}) knows versions "
            f"up to {SCHEMA_VERSION}; a newer pytest-genai wrote it — upgrade pytest-genai (pip install -U "
            "pytest-genai) to read or add to it, or give another store (--store URL)")
    if version == SCHEMA_VERSION:
        return True
    if not write:
        if store.read_only:
            raise StoreError(f"store {store.shown}: has schema version {version} and this pytest-genai reads "
                             f"{SCHEMA_VERSION}; it is read-only, so it cannot be upgraded — open it once where it "
                             "can be written, or with the version that wrote it")
        return False
    for version in range(version, SCHEMA_VERSION):
        if (step := MIGRATIONS.get(version)) is None:
            raise StoreError(f"store {store.shown}: schema version {version} has no migration to {version + 1} in "
                             f"pytest-genai {__version__}; open it with the version that wrote it")
        step(conn)
    conn.execute(meta.update().where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
    return True
