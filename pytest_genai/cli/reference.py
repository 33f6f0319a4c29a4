"""``pytest-genai reference``: published reference measurements as rows, runs, generation claims and verdicts.

Each subcommand's help says what it does; ``check`` never fails a run (exit 0), bad input exits 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from pytest_genai.reference import sources

DESCRIPTION = ("published vendor measurements: `reference list | runs DIR | generations | check RUN.json | "
               "plot RUN.json... -o PNG | fetch`")


def _rows(args: argparse.Namespace) -> list:
    if getattr(args, "rows", None):
        from pytest_genai.reference.row import rows_from_json

        return rows_from_json(json.loads(Path(args.rows).read_text(encoding="utf-8")), args.rows)
    if args.file and not args.source:
        raise sources.UnknownSourceError("--file needs --source (which publisher's format the file is in)")
    names = [args.source] if args.source else list(sources.SOURCES)
    return [row for name in names for row in sources.load(name, args.file, args.commit)]


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", help=f"only this source ({', '.join(sources.SOURCES)})")
    p.add_argument("--file", help="read a newer copy of --source (from `reference fetch`) instead of the shipped one")
    p.add_argument("--commit", help="the version of --file, recorded in each row's provenance")
    p.add_argument("--rows", metavar="ROWS.json", help="read rows written by `reference list --json` (or by hand, "
                                                        "in that shape) instead of the shipped sources")


def _list(args: argparse.Namespace) -> int:
    from pytest_genai.tables import text_table

    rows = _rows(args)
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=2))
        return 0
    table = [[r.provenance.source, r.row_id, r.generation, r.model, r.cards,
              ", ".join(f"{k}={v:g}" for k, v in r.metrics.items()), ", ".join(r.unstated) or "none",
              f"{r.provenance.path}:{r.provenance.line}@{r.provenance.commit[:10]}"] for r in rows]
    for line in text_table(["source", "row", "generation", "model", "cards", "published", "unstated", "where"],
                           table):
        print(line)
    return 0


def _runs(args: argparse.Namespace) -> int:
    from pytest_genai.atomic import write_json_atomic
    from pytest_genai.reference.runs import run_json

    rows = _rows(args)
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    by_gen: dict[str, list] = {}
    for row in rows:
        by_gen.setdefault(row.generation, []).append(row)
    for gen, these in sorted(by_gen.items()):
        path = write_json_atomic(out / f"reference-{gen}.json", run_json(these))
        print(f"{path}: {len(these)} published rows on {gen}")
    return 0


def _generations(args: argparse.Namespace) -> int:
    from pytest_genai.claims import load_claims
    from pytest_genai.reference.generations import judge, table
    from pytest_genai.tables import make_table

    rows = _rows(args)
    summaries = judge(rows, load_claims())
    if args.json:
        print(json.dumps([{"claim": s.claim_id, "bounds": s.bounds, "paper_text": s.paper_text,
                           "checks": [dict(vars(c)) for c in s.checks]} for s in summaries], indent=2))
        return 0
    for s in summaries:
        print(s.text())
    headers, lines = table(summaries, rows)
    if lines:
        print()
        print(make_table(headers, lines).to_markdown())
    return 0


def _check(args: argparse.Namespace) -> int:
    from pytest_genai.reference.claims import check_run, counterparts
    from pytest_genai.results.errors import ReportInputError
    from pytest_genai.results.runs import load_run

    run = load_run(args.run)
    found = check_run(run, counterparts(_rows(args)))
    if not found:
        print(f"{args.run}: no benchmark has a published counterpart (same device generation, model and config)")
    for record, verdict in found:
        print(f"{record.label}: reference {verdict.verdict}: {verdict.message}")
    if args.write:
        from pytest_genai.atomic import write_json_atomic
        from pytest_genai.reference.annotate import with_verdicts

        if Path(args.write).resolve() == Path(args.run).resolve():
            raise ReportInputError(f"--write {args.write} is the input run; write to another file")
        doc = json.loads(Path(args.run).read_text(encoding="utf-8-sig"))
        write_json_atomic(args.write, with_verdicts(doc, run, found))
        print(f"{args.write}: the run with its reference verdicts (pytest-genai report shows them)")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from pytest_genai.reference.claims import counterparts
    from pytest_genai.reference.plot import pairs, plot_pairs
    from pytest_genai.results.errors import ReportInputError
    from pytest_genai.report.plots import PlotsUnavailable
    from pytest_genai.results.runs import load_run

    if any(Path(args.output).resolve() == Path(r).resolve() for r in args.runs):
        raise ReportInputError(f"-o {args.output} is one of the input runs; write the plot to another file")
    found = pairs([load_run(r) for r in args.runs], counterparts(_rows(args)))
    if not found:
        print(f"{', '.join(args.runs)}: no benchmark has a published counterpart (same device generation, model and "
              "config): nothing to plot")
        return 0
    try:
        path = plot_pairs(found, args.output)
    except PlotsUnavailable as exc:
        raise ReportInputError(str(exc)) from None
    for p in found:
        print(f"{p.benchmark} ({Path(p.run).name}): {p.measured:g} vs published {p.published:g} {p.unit}: {p.verdict}")
    print(f"wrote {path}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    path = sources.fetch(args.name, args.dest)
    print(f"{path}: read it with `pytest-genai reference list --source {args.name} --file {path}`")
    return 0


def build() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-genai reference", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="the published rows with their provenance")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(body=_list)
    p = sub.add_parser("runs", help="write one run file per device generation into DIR")
    p.add_argument("dir")
    _add_source(p)
    p.set_defaults(body=_runs)
    p = sub.add_parser("generations", help="the papers' generation claims judged on the published rows")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(body=_generations)
    p = sub.add_parser("check", help="reference verdicts of a run's benchmarks that have a published counterpart")
    p.add_argument("run")
    p.add_argument("--write", metavar="OUT.json", help="also write the run with its reference verdicts added")
    _add_source(p)
    p.set_defaults(body=_check)
    p = sub.add_parser("plot", help="runs' values beside the published numbers of their counterparts, one PNG")
    p.add_argument("runs", nargs="+", metavar="RUN.json")
    p.add_argument("-o", "--output", required=True, metavar="PNG", help="the plot's file")
    _add_source(p)
    p.set_defaults(body=_plot)
    p = sub.add_parser("fetch", help="download the newest online copy of a source")
    p.add_argument("name", choices=sorted(sources.SOURCES))
    p.add_argument("dest")
    p.set_defaults(body=_fetch)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from pytest_genai.reference.optimum_habana import ReferenceFormatError
    from pytest_genai.reference.row import RowFormatError
    from pytest_genai.results.errors import ReportInputError

    parser = build()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        return args.body(args)
    except (ReferenceFormatError, RowFormatError, sources.UnknownSourceError, ReportInputError, ValueError) as exc:
        print(f"pytest-genai reference: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"pytest-genai reference: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
