"""``pytest-genai history METRIC``: one metric's values across the stored runs as a table and a trend plot, with each
line's change points. ``--changes`` prints only those and exits 1 on a step in the metric's bad direction."""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any, Sequence

from pytest_genai.store.read import Bound, Point, StoreQuery, parse_time, series


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-genai history",
                                description="A metric's values across the runs in the results store, oldest first, "
                                            "and a trend plot (one line per device generation, claims' bounds shaded).")
    p.add_argument("metric", help="the metric, e.g. tokens_per_s")
    p.add_argument("--experiment", help="only this experiment (quant, finetune, diffusion, dabench, ...)")
    p.add_argument("--config", help="only this config id (the benchmark's parameter id)")
    p.add_argument("--model", help="only this model")
    p.add_argument("--device-generation", help="only this device generation (a100, h100, gaudi2, cpu, ...)")
    p.add_argument("--store", metavar="URL", help="the store (default: $GENAI_STORE, else the SQLite file in the "
                                                 "user data folder)")
    p.add_argument("--format", choices=("md", "csv", "json"), default="md", help="the printed series' format")
    p.add_argument("--plot", metavar="PNG", help="write the trend plot here (default: history-METRIC.png)")
    p.add_argument("--no-plot", action="store_true", help="print the series only")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="also write the printed series to FILE (atomically; repeatable)")
    p.add_argument("--changes", action="store_true",
                   help="print the change points only (needs apache-otava); exit 1 when one is a step in the metric's "
                        "bad direction, 0 when there is none")
    p.add_argument("--max-pvalue", type=_pvalue, default=None, metavar="P",
                   help="significance a change point needs (default 0.001, Apache Otava's)")
    return p


def _pvalue(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a p-value between 0 and 1 (e.g. 0.001)")
    return value


def default_plot(metric: str) -> str:
    """``history-<metric>.png`` in the working folder, the name slugged and capped: the plot without ``--plot``."""
    from pytest_genai.report.output import file_stem

    return f"history-{file_stem(metric)}.png"


def line_points(points: Sequence[Point]) -> dict[str, list[Point]]:
    """Each line's points (generation, benchmark, model, config; oldest first), labelled brief but distinct."""
    several = len({(p.benchmark, p.model) for p in points}) > 1
    keys = [(p.generation, p.benchmark, p.model, p.config_id) for p in points]
    brief = {k: f"{k[0] or 'no device'} · {k[3] or k[1]}" if several else k[0] or "no device" for k in keys}
    labels = {}
    for key, label in brief.items():  # where two lines share a label: its benchmark, and the model if that clashes too
        clash = [k for k in brief if brief[k] == label]
        model = f" · {key[2]}" if sum(k[1] == key[1] for k in clash) > 1 else ""
        labels[key] = label if len(clash) == 1 else f"{key[0] or 'no device'} · {key[1]}{model}"
    out: dict[str, list[Point]] = {}
    for key, p in zip(keys, points):
        out.setdefault(labels[key], []).append(p)
    return out


def lines(points: Sequence[Point]) -> dict[str, list[tuple[Any, float]]]:
    """``(time, value)`` per line of :func:`line_points` (points with an unreadable time left out)."""
    label = {id(p): name for name, line in line_points(points).items() for p in line}
    out: dict[str, list[tuple[Any, float]]] = {}
    for p in points:  # in the points' order, as line_points: the plot's line order
        if (when := parse_time(p.run_time)) is not None:
            out.setdefault(label[id(p)], []).append((when, p.value))
    return out


def bands(bounds: Sequence[Bound], generations: set[str | None]) -> list[tuple[str, float | None, float | None]]:
    """Distinct claim bounds on the plotted generations (a claim's bounds once however many runs judged it)."""
    return list(dict.fromkeys((b.claim_id, b.low, b.high) for b in bounds if (b.low is not None or b.high is not None)
                              and (b.generation is None or b.generation in generations)))


COLUMNS = ("run", "time", "commit", "generation", "benchmark", "model", "value", "unit", "source", "rounds")


def _rows(points: Sequence[Point]) -> list[list[Any]]:
    return [[p.run_id, p.run_time, (p.commit or "")[:12], p.generation, p.benchmark, p.model, p.value, p.unit,
             p.source, p.rounds] for p in points]


def history_main(argv: Sequence[str] | None = None) -> int:
    from pytest_genai.cli.report import run_command

    return run_command(_parser, _history, argv)


def _history(args: argparse.Namespace) -> int:
    from pytest_genai.cli.report import emit, warn
    from pytest_genai.report.export import csv_text, json_text
    from pytest_genai.report.output import check_distinct, check_outputs, file_stem
    from pytest_genai.tables import make_table, md_inline, one_line
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.errors import StoreError
    from pytest_genai.store.location import given_or_default

    filters = [(k, v) for k, v in (("experiment", args.experiment), ("config", args.config), ("model", args.model),
                                   ("generation", args.device_generation)) if v]
    url = given_or_default(args.store)
    plot = None if args.no_plot or (args.changes and not args.plot) else (args.plot or default_plot(args.metric))
    # neither the table nor the plot may replace the store, nor one of them the other
    store_file = [url[len("sqlite:///"):]] if url.startswith("sqlite:///") else []
    check_outputs(args.output, store_file, example=f"history-{file_stem(args.metric)}.{args.format}")
    if plot is not None:
        check_outputs([plot], store_file, option="--plot", example=default_plot(args.metric))
    check_distinct([("-o", o) for o in args.output] + ([("--plot", plot)] if plot is not None else []))
    with open_store(url, create=False) as store:
        points, bounds = series(store, args.metric, StoreQuery(tuple(filters)))
        shown = store.shown
    if not points:
        raise StoreError(f"store {shown}: no value of {args.metric!r}"
                         + (" matching " + " ".join(f"{k}={v}" for k, v in filters) if filters else "")
                         + "; `pytest-genai store list` shows the runs it holds")
    changes, unavailable = _changes(args, points)
    # user-given names: text in the heading, never Markdown
    heading = (f"## pytest-genai history{' --changes' if args.changes else ''}: {md_inline(one_line(args.metric))}"
               f"\n\nstore: {md_inline(one_line(shown))} · {len(points)} value(s)")
    if args.format == "csv":
        text = csv_text(CHANGE_COLUMNS, [list(c.to_json().values()) for c in changes]) if args.changes \
            else csv_text(COLUMNS, _rows(points))  # a change's cells: to_json's, in order
    elif args.format == "json" and args.changes:
        text = json_text({"metric": args.metric, "change_points": [c.to_json() for c in changes],
                          "worse": sum(1 for c in changes if c.worse is not False)})
    elif args.format == "json":
        text = json_text({"metric": args.metric, "filters": dict(filters),
                          "points": [dict(zip(COLUMNS, r)) for r in _rows(points)], "claims": [vars(b) for b in bounds],
                          "change_points": None if unavailable else [c.to_json() for c in changes],
                          **({"change_points_unavailable": unavailable} if unavailable else {})})
    elif args.changes:
        text = f"{heading}\n\n{_changes_md(changes)}\n"
    else:
        table = make_table(COLUMNS, [[c if c is not None else "—" for c in r] for r in _rows(points)],
                           [False] * 6 + [True, False, False, True])
        text = (f"{heading} in {len({p.run_id for p in points})} run(s)\n\n{table.to_markdown()}\n\n"
                + (f"Change points: not computed ({unavailable})." if unavailable else _changes_md(changes)) + "\n")
    emit(text, args.output)
    if plot is not None:
        from pytest_genai.report.plots import PlotsUnavailable, trend_plot

        unit = next((p.unit for p in points if p.unit), "")
        marks = [(c.line, when, c.step) for c in changes if (when := parse_time(c.run_time)) is not None]
        try:
            written = trend_plot(lines(points), bands(bounds, {p.generation for p in points}), args.metric, unit, plot,
                                 changes=marks)
        except PlotsUnavailable as exc:
            warn([str(exc)])
        else:
            print(f"wrote {written}", file=sys.stderr)
    if args.changes and any(c.worse is not False for c in changes):
        return 1  # a step in the bad direction (or any step of a metric without one): CI fails on it
    return 0


CHANGE_COLUMNS = ("line", "run", "time", "commit", "before", "after", "step", "pvalue", "worse")


def _changes(args: argparse.Namespace, points: Sequence[Point]) -> tuple[list[Any], str | None]:
    """The change points of every line, or ([], why) when apache-otava is missing (an error with --changes)."""
    from pytest_genai.results.errors import ReportInputError
    from pytest_genai.claims import default_metric_info
    from pytest_genai.store.changes import MAX_PVALUE, ChangePointsUnavailable, find_changes

    info, _ = default_metric_info()
    direction = getattr(info.get(args.metric), "direction", None)
    try:
        return find_changes(line_points(points), direction, args.max_pvalue or MAX_PVALUE), None
    except ChangePointsUnavailable as exc:
        if args.changes:
            raise ReportInputError(f"--changes: {exc}") from None
        return [], str(exc)


def _changes_md(changes: Sequence[Any]) -> str:
    from pytest_genai.tables import format_number, make_table

    if not changes:
        return "Change points: none (Apache Otava's e-divisive means, p <= the --max-pvalue, default 0.001)."
    rows = [[c.line, str(c.run_id), c.run_time or "—", (c.commit or "")[:12] or "—", format_number(c.before),
             format_number(c.after), f"{c.step:+.2%}", f"{c.pvalue:.2g}",
             "worse" if c.worse else ("better" if c.worse is False else "—")] for c in changes]
    table = make_table(["line", "from run", "time", "commit", "mean before", "mean after", "step", "p-value",
                        "direction"], rows, [False, True, False, False, True, True, True, True, False])
    return "Change points (Apache Otava's e-divisive means; each line's new level starts at the run named):\n\n" + \
        table.to_markdown()
