"""``pytest-genai store add|list|info``: put runs into the results store and see what it holds."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from pytest_genai.store.location import given_or_default

_STORE_HELP = ("the store: a SQLAlchemy URL (sqlite:///PATH, postgresql+psycopg://USER@HOST/DB) or a file path "
               "(default: $GENAI_STORE, else the SQLite file in the user data folder)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-genai store", description="The results store: add runs, list them.")
    sub = p.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", help="add --benchmark-json files or pytest-benchmark storage folders (.benchmarks); "
                                     "a run already stored is skipped")
    add.add_argument("runs", nargs="+", metavar="RUN.json|FOLDER")
    lst = sub.add_parser("list", help="the stored runs, newest first")
    info = sub.add_parser("info", help="where the store is, its schema version and its rows per table")
    for each in (add, lst, info):
        each.add_argument("--store", metavar="URL", help=_STORE_HELP)
    lst.add_argument("--format", choices=("md", "csv", "json"), default="md")
    return p


def _add(args: argparse.Namespace) -> int:
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_rows, read_rows, run_files

    # every file read and checked before anything is written: one bad file in a folder adds none of them
    files = [(path, read_rows(path)) for path in run_files(args.runs)]
    added = done = 0
    with open_store(given_or_default(args.store)) as store:
        try:
            for path, rows in files:
                result = add_rows(store, rows, path.name)  # one transaction a run: a run is in, or not at all
                added += result.new
                done += 1
                print(f"{path}: {'added as' if result.new else 'already stored as'} run {result.run_id} "
                      f"({result.rows} rows) in {store.shown}")
        except KeyboardInterrupt:  # say what is in the store, never a traceback
            print(f"pytest-genai store: interrupted: {added} of {len(files)} added to {store.shown} ({done - added} "
                  "already stored); run the same command again to add the rest", file=sys.stderr)
            return 130  # 128 + SIGINT, as a shell gives it
        print(f"{added} run(s) added, {len(files) - added} already stored; store {store.shown}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    from pytest_genai.cli.report import emit
    from pytest_genai.report.export import csv_text, json_text
    from pytest_genai.tables import make_table

    from pytest_genai.store.engine import open_store
    from pytest_genai.store.read import run_summaries

    with open_store(given_or_default(args.store), create=False) as store:
        runs = run_summaries(store)
        print(f"store {store.shown}: {len(runs)} run(s)", file=sys.stderr)  # stdout stays the table alone
    columns = ["id", "time", "commit", "scale", "generations", "benchmarks", "source"]
    rows = [[r[c] for c in columns] for r in runs]
    emit(csv_text(columns, rows) if args.format == "csv" else json_text(runs) if args.format == "json"
         else make_table(columns, [[("—" if c is None else c) for c in row] for row in rows]).to_markdown(), [])
    return 0


def table_counts(store: Any) -> dict[str, int]:
    from sqlalchemy import func, select

    return store.read(lambda conn: {name: int(conn.execute(select(func.count()).select_from(t)).scalar())
                                           for name, t in store.md.tables.items()})


def _info(args: argparse.Namespace) -> int:
    from pytest_genai.store.engine import open_store, stored_version

    with open_store(given_or_default(args.store), create=False) as store:
        version = store.read(lambda conn: stored_version(conn, store.md, store.shown))
        print(f"store: {store.shown}\nschema version: {version}")
        for name, n in table_counts(store).items():
            print(f"{name}: {n} row(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from pytest_genai.cli.report import run_command

    return run_command(_parser, lambda args: {"add": _add, "list": _list, "info": _info}[args.action](args), argv)
