"""A store never loses a run to a URL that names no file, never modifies another application's database, reads without
a write lock (also from a read-only mount), and reports a damaged schema version as bad input (docs/reliability.md)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_genai.store.engine import open_store
from pytest_genai.store.errors import StoreError
from pytest_genai.store.read import matching_runs, parse_query, run_summaries
from pytest_genai.store.write import add_document

from .test_store import generation_doc


def _main(*argv: str) -> int:
    from pytest_genai.cli import main

    return main(list(argv))


def _one_line_error(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite:///  ",
                                 "sqlite:///file:runs?mode=memory&uri=true"])
def test_a_store_url_that_names_no_file_is_refused(url: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """SQLite opens an in-memory database for these: `store add` said "added as run 1", exit 0, and kept nothing
    (`GENAI_STORE="sqlite:///$UNSET"` in CI gives the second)."""
    run = tmp_path / "run.json"
    run.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    _one_line_error(capsys, _main("store", "add", str(run), "--store", url), "names no database file")
    monkeypatch.setenv("GENAI_STORE", url)
    _one_line_error(capsys, _main("store", "add", str(run)), "names no database file")
    with pytest.raises(StoreError, match="names no database file"):
        open_store(url)
    from pytest_genai.plugin.options import parse_store  # --genai-store: a usage error before any benchmark runs

    with pytest.raises(ValueError, match="names no database file"):
        parse_store(url)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("tables", [["items"], ["runs"]])
def test_another_applications_database_is_never_modified(tables: list[str], store_url: str, tmp_path: Path,
                                                          capsys) -> None:
    """`store add --store other-app.sqlite` added seven tables to it; with its own `runs` table, six were committed
    before the error."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(store_url)
    with engine.begin() as conn:
        for name in tables:
            conn.exec_driver_sql(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, note TEXT)")
            conn.exec_driver_sql(f"INSERT INTO {name} (id, note) VALUES (1, 'theirs')")
    engine.dispose()
    file = Path(store_url[len("sqlite:///"):]) if store_url.startswith("sqlite:///") else None
    before = _digest(file) if file else None
    run = tmp_path / "run.json"
    run.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    _one_line_error(capsys, _main("store", "add", str(run), "--store", store_url), "is not a pytest-genai store",
                    ", ".join(tables))
    _one_line_error(capsys, _main("store", "list", "--store", store_url), "is not a pytest-genai store")
    engine = sqlalchemy.create_engine(store_url)
    assert sorted(sqlalchemy.inspect(engine).get_table_names()) == sorted(tables)
    engine.dispose()
    if file:
        assert _digest(file) == before
        with sqlite3.connect(file) as conn:  # not switched to WAL either: a setting SQLite keeps in the file
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def _stored(tmp_path: Path, n: int = 2) -> Path:
    path = tmp_path / "r.sqlite"
    with open_store(f"sqlite:///{path}") as store:
        for i in range(n):
            doc = generation_doc("a100", f"2026-0{i + 1}-01T00:00:00", 250.0 + i)
            doc["commit_info"]["id"] = f"ab{i}" + "0" * 37
            add_document(store, doc, f"run{i}.json")
    return path


def test_a_reader_takes_no_write_lock(tmp_path: Path, monkeypatch) -> None:
    """Every read started BEGIN IMMEDIATE: a reader waited behind a writer (5.6 s), and failed once the writer held
    the lock longer than the busy timeout. Here a writer holds it throughout and lock waits are cut to 50 ms."""
    import pytest_genai.store.engine as engine

    path = _stored(tmp_path)
    monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(engine, "RETRIES", 1)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM store_meta WHERE key = 'created_time'")  # uncommitted: readers see the old snapshot
    try:
        with open_store(f"sqlite:///{path}", create=False) as store:
            assert [r["id"] for r in run_summaries(store)] == [2, 1]
            assert matching_runs(store, parse_query("latest")) == [2, 1]
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def _can_mount_read_only(folder: Path) -> str | None:
    if not shutil.which("unshare"):
        return "no unshare(1) here to make a read-only mount"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind '{folder}' '{folder}' && mount -o "
                            f"remount,ro,bind '{folder}' '{folder}' && ! touch '{folder}/x' 2>/dev/null"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"a read-only bind mount cannot be made here: {probe.stderr.strip()}"


def test_a_store_on_a_read_only_mount_can_be_read(tmp_path: Path) -> None:
    """`store list`, `history` and `gate --baseline` all failed on a read-only mount ("attempt to write a readonly
    database", or "unable to open database file" for a WAL store with no -shm file beside it)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _stored(folder)
    current = tmp_path / "current.json"
    current.write_text(json.dumps(generation_doc("a100", "2026-03-01T00:00:00", 252.0)))
    reason = _can_mount_read_only(folder)
    if reason:
        pytest.skip(reason)
    commands = [["store", "list"], ["history", "tokens_per_s", "--no-plot"],
                ["gate", "--baseline", "latest", str(current), "--no-claims"]]
    script = "; ".join([f"mount --bind '{folder}' '{folder}'", f"mount -o remount,ro,bind '{folder}' '{folder}'"]
                       + [" ".join([f"'{sys.executable}'", "-m", "pytest_genai.cli", *(f"'{a}'" for a in argv),
                                    "--store", f"'{path}'", ">/dev/null", "||", "echo", f"'FAILED {argv[0]}'"])
                          for argv in commands])
    before = sorted(os.listdir(folder))
    out = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "MPLBACKEND": "Agg"}, timeout=300)
    assert "FAILED" not in out.stdout and "error" not in out.stderr, out.stdout + out.stderr
    assert sorted(os.listdir(folder)) == before
    with open_store(f"sqlite:///{path}", create=False) as store:  # and writing is refused with the reason
        store.read_only = True  # as opened on the mount (this process can write the file)
        with pytest.raises(StoreError, match="cannot be written"):
            add_document(store, generation_doc("a100", "2026-04-01T00:00:00", 1.0), "x.json")


@pytest.mark.parametrize("version", ["2.0", "abc", "", None])
def test_a_damaged_schema_version_is_one_line_exit_2(version: str | None, tmp_path: Path, capsys) -> None:
    """`2.0`, `abc` or `''` raised ValueError (exit 1: the gate's "regression"); a deleted row read as "UNIQUE
    constraint failed" (add) or "holds no store" (list)."""
    path = _stored(tmp_path, 1)
    with sqlite3.connect(path) as conn:
        if version is None:
            conn.execute("DELETE FROM store_meta WHERE key = 'schema_version'")
        else:
            conn.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (version,))
    before = _digest(path)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(generation_doc("h100", "2026-05-01T00:00:00", 600.0)))
    needle = "no schema_version row" if version is None else f"schema_version is {version!r}, not a whole number"
    for argv in (["store", "add", str(run)], ["store", "list"], ["store", "info"], ["history", "tokens_per_s"],
                 ["gate", "--baseline", "latest", str(run)]):
        _one_line_error(capsys, _main(*argv, "--store", str(path)), needle)
    assert _digest(path) == before


def test_a_commit_filter_is_a_literal_prefix(tmp_path: Path) -> None:
    """`commit=%` (and `_`) matched every run: the value went into SQL LIKE with its wildcards."""
    path = _stored(tmp_path)
    with open_store(f"sqlite:///{path}", create=False) as store:
        assert matching_runs(store, parse_query("commit=%")) == []
        assert matching_runs(store, parse_query("commit=_")) == []
        assert matching_runs(store, parse_query("commit=ab0")) == [1]
        assert matching_runs(store, parse_query("commit=ab")) == [2, 1]
