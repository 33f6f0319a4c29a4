"""``pytest-genai report | compare | gate``: argparse front-ends returning exit codes.

Exit codes (:mod:`pytest_genai.results.errors`): 0 no regression, 1 regression (gate), 3 a change past its threshold
left undecided (gate), 2 bad input; every expected failure is one message on stderr, never a traceback."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_genai.results.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED, ReportInputError
from pytest_genai.report.matching import check_unique
from pytest_genai.report.output import check_outputs, names_in, write_output
from pytest_genai.results.registry import MetricInfo
from pytest_genai.claims import claims_by_id, default_metric_info, known_experiments, load_claims
from pytest_genai.results.runs import Run, load_run
from pytest_genai.report.thresholds import ThresholdError, Thresholds, parse_thresholds

_SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def run_command(build: Callable[[], argparse.ArgumentParser], body: Callable[[argparse.Namespace], int],
                argv: Sequence[str] | None) -> int:
    """Parse ``argv`` with ``build()``'s parser and run ``body``; an expected failure is one line on stderr, exit 2."""
    parser = build()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        if getattr(args, "two_runs", False) and len(_refs(args)) != 2:  # gate: usage and the error, as argparse does
            parser.error(f"give two runs, the baseline (or --baseline RUN) and the current one; got {len(_refs(args))}")
    except SystemExit as exc:  # argparse already printed usage and the error
        return int(exc.code) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return body(args)
    except (ReportInputError, ThresholdError) as exc:
        message = str(exc)
    except BrokenPipeError:  # stdout's reader went away (`| head`): the caller exits 0 quietly, as coreutils do
        raise
    except OSError as exc:  # an output path that cannot be written
        message = f"cannot write {f'{exc.filename}: ' if exc.filename else ''}{exc.strerror or exc}"
    except (RecursionError, MemoryError) as exc:  # pathological input that slipped past the loader's checks
        message = (f"the input is too deeply nested or too large to process ({type(exc).__name__}); pass the files "
                   "exactly as pytest --benchmark-json wrote them")
    print(f"pytest-genai {parser.prog.split()[-1]}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _load_nonempty(path: str, role: str) -> Run:
    run = load_run(path)
    if not run.records:
        absent = "".join(f"; {kind}: {why}" for kind, why in run.absent.items())
        raise ReportInputError(f"{path}: the {role} run contains no benchmarks — check the run's -m/-k selection, "
                               f"and that benchmarks were not disabled (--benchmark-disable) or skipped{absent}")
    return run


def warn(lines: Sequence[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def _prepare(args: argparse.Namespace) -> tuple[Thresholds, dict[str, MetricInfo], list[Run]]:
    """compare's and gate's thresholds (--max-regression, --run-noise), metric registry and runs (each a file, a
    pytest-benchmark storage id or a store query), refused when -o names one of them, a run has indistinguishable
    benchmarks, or a threshold or --metric names no known metric (or experiment): a usage error, not an empty table."""
    import difflib

    from pytest_genai.report.run_noise import parse_run_noise
    from pytest_genai.report.validate import check_consistent
    from pytest_genai.store.read import looks_like_query
    from pytest_genai.store.refs import file_content_hash, input_files, load_ref

    try:
        noise = parse_run_noise(args.run_noise)
    except ValueError as exc:
        raise ReportInputError(str(exc)) from None
    thresholds = dataclasses.replace(parse_thresholds(args.max_regression, option="--max-regression"), run_noise=noise)
    info, warning = default_metric_info()
    warn([warning] if warning else [])
    refs = _refs(args)
    if len(refs) < 2:  # gate's parser has already refused anything but two
        raise ReportInputError("give at least two runs to compare (baseline first)")
    check_outputs(args.output, [f for r in refs for f in input_files(r, args.store)])
    roles = ["baseline"] + ["current" if len(refs) == 2 else f"#{i + 2}" for i in range(len(refs) - 1)]
    # a baseline store query never picks the current run file's own stored copy (--genai-store stored it last)
    exclude = (file_content_hash(refs[1]) if len(refs) == 2 and not Path(refs[0]).exists()
               and looks_like_query(refs[0].strip()) and Path(refs[1]).is_file() else None)
    runs = []
    for i, (ref, role) in enumerate(zip(refs, roles)):
        run = (_load_nonempty(ref, role) if Path(ref).exists()
               else load_ref(ref, args.store, info, exclude if i == 0 else None))
        if not run.records:  # a file without benchmarks has already been refused, with the reasons
            raise ReportInputError(f"{ref}: the {role} run contains no benchmarks")
        runs.append(run)
    for run in runs:
        check_unique(run)
        check_consistent(run, info)
    warn([w for run in runs for w in run.warnings])
    recorded = {m for run in runs for r in run.records for m in r.metrics}
    experiments = known_experiments(r for run in runs for r in run.records)
    known = set(info) | recorded
    thresholds.check_known(known, experiments, option="--max-regression")
    # nothing drops by 100% or more: such a threshold would let a higher-is-better metric never regress
    for metric in sorted(m for m in recorded if getattr(info.get(m), "direction", None) == "higher"):
        for experiment in sorted(experiments) or [None]:
            limit = thresholds.for_metric(metric, experiment, getattr(info.get(metric), "max_regression", None))
            if limit >= 1:
                raise ThresholdError(f"--max-regression: {limit:.0%} for {metric!r} (higher is better) can never be "
                                     "reached, since nothing drops by 100% or more; give a threshold under 100%")
    parts = [f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
             for name in getattr(args, "metric", []) if name not in known
             for close in [difflib.get_close_matches(name, sorted(known), n=1)]]
    if parts:
        raise ReportInputError(f"--metric: unknown metric {', '.join(parts)}; the runs record: "
                               f"{', '.join(sorted(recorded)) or 'no metric'}")
    return thresholds, info, runs


def emit(text: str, outputs: Sequence[str]) -> None:
    """``text`` on stdout, then into every ``-o`` file; a closed stdout (``| head``) still lets the files be written."""
    text = text if text.endswith("\n") else text + "\n"
    try:  # stdout first: an -o file that cannot be written must not lose the verdict
        print(text, end="")
        sys.stdout.flush()
    except BrokenPipeError:
        from pytest_genai.cli import quiet_stdout

        quiet_stdout()  # so that the interpreter's final flush does not fail again
    for out in outputs:
        write_output(out, text)


def _refs(args: argparse.Namespace) -> list[str]:
    return ([args.baseline] if getattr(args, "baseline", None) else []) + list(args.runs)


def _report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-genai report", description="Claims table, one table per experiment, "
                                "and plots, from a --benchmark-json run file.")
    p.add_argument("run", help="pytest-benchmark JSON written by pytest --benchmark-json")
    p.add_argument("--format", choices=("md", "html"), default=None,
                   help="format for stdout and for -o files without a .md/.html suffix (default: md)")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="write the report to FILE (atomically; repeatable; format from the suffix .md or .html)")
    p.add_argument("--plots", metavar="DIR", default=None,
                   help="write PNG plots into DIR and link them (HTML always embeds plots, in a temp dir if not given)")
    return p


def _report(args: argparse.Namespace) -> int:
    from pytest_genai.report.plots import PlotsUnavailable, write_plots
    from pytest_genai.report.render import render

    if args.plots is not None and not args.plots.strip():  # Path('') is the temp folder's stand-in: dead links
        raise ReportInputError("--plots '': an empty folder name; give the folder for the PNG plots (--plots plots) or "
                               "leave --plots out")
    check_outputs(args.output, [args.run])
    run = _load_nonempty(args.run, "report's")
    warn(run.warnings)
    info, warning = default_metric_info()
    warn([warning] if warning else [])
    claims, warning = claims_by_id()
    notes = [warning] if warning else []
    fmt = args.format or "md"
    targets: list[tuple[Path | None, str]] = [
        (Path(out), _SUFFIX_FORMATS.get(Path(out).suffix.lower(), fmt)) for out in args.output] or [(None, fmt)]
    with tempfile.TemporaryDirectory(prefix="pytest-genai-plots-") as tmp:
        images: list[Path] = []
        if args.plots is not None or any(fmt == "html" for _, fmt in targets):
            try:
                # a report written into the plots folder keeps its name: the plots take others (-o DIR/x.png)
                folder = Path(args.plots or tmp)
                images = write_plots(run.records, folder, info, reserved=names_in(folder, args.output))
            except PlotsUnavailable as exc:
                if args.plots is not None:  # asked for explicitly: fail clearly
                    raise ReportInputError(f"--plots {args.plots}: {exc}") from None
                warn([str(exc)])
                notes.append(str(exc))
        for path, fmt in targets:
            # Markdown links only to plots that outlive this command (--plots DIR).
            text = render(run, info, claims, images if (fmt == "html" or args.plots is not None) else [], notes, fmt,
                          path.parent if path else Path.cwd())
            if path is None:
                sys.stdout.write(text)
            else:
                write_output(path, text)
                print(f"wrote {path} ({fmt})", file=sys.stderr)
        if args.plots is not None:
            print(f"wrote {len(images)} plot(s) to {args.plots}", file=sys.stderr)
    return EXIT_OK


def report_main(argv: Sequence[str] | None = None) -> int:
    return run_command(_report_parser, _report, argv)


def _pair_parser(gate: bool) -> argparse.ArgumentParser:
    """compare's parser, or gate's: their shared options, then their own."""
    p = argparse.ArgumentParser(prog=f"pytest-genai {'gate' if gate else 'compare'}", description=(
        "Exit 1 when a metric regressed beyond its threshold, a generation claim fails, or a benchmark of the baseline "
        "has no counterpart in the current run; 3 when nothing regressed but a change past its threshold could not "
        "be decided; 0 otherwise; 2 on unusable input." if gate else
        "Per-metric ratios between two runs, matched by experiment, config and model; with three or more runs (or "
        "--metric), one side-by-side table with every run's ratio to the first."))
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="the runs, baseline first: a --benchmark-json file, a run in pytest-benchmark's storage "
                        "(0003, storage:latest) or a query of the results store ('generation=a100 latest', best, "
                        "run=12)")
    p.add_argument("--store", metavar="URL", default=None,
                   help="the results store the queries read (SQLAlchemy URL or file; default: $GENAI_STORE, else "
                        "the SQLite file in the user data folder)")
    p.add_argument("--format", choices=("md", "csv", "json"), default="md",
                   help="md (default), csv or json: for stdout and every -o file")
    p.add_argument("--max-regression", default=None, metavar="SPEC",
                   help="per-metric thresholds, e.g. 'tokens_per_s=5%%,perplexity=0.5%%,quant:acc=1%%,*=10%%'; "
                        "pytest-benchmark's field:N%% form also works: round-time statistics min, max, mean, median, "
                        "stddev, iqr ('median:10%%') or any genai metric ('tokens_per_s:5%%'); unknown metric or "
                        "experiment names are an error")
    p.add_argument("--run-noise", default=None, metavar="SPEC",
                   help="how much a run's log mean moves between launches of the same code, which one run's rounds "
                        "cannot show: 'measured' (default: the table measured on a shared 2-vCPU VM, "
                        "claims/data/run_noise.toml), a number for every experiment (0: rounds alone, for a node whose "
                        "launches repeat), or 'finetune=0.2,*=0.05'; a baseline of several runs (last:N) measures its "
                        "own")
    p.add_argument("--all", action="store_true",
                   help="print the row of every compared metric, not only the summary")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="also write the printed output to FILE (atomically; repeatable; never one of the inputs)")
    if not gate:
        p.add_argument("--metric", action="append", default=[], metavar="NAME",
                       help="only this metric (repeatable); gives the side-by-side table also for two runs")
        return p
    for flag, text in (
            ("--allow-missing", "do not fail when a benchmark of the baseline, or a metric with a direction of a "
                                "matched one, is missing from the current run"),
            ("--strict", "also fail when a metric without a direction of a matched baseline benchmark is missing from "
                         "the current run"),
            ("--strict-inconclusive", "also fail (exit 1) on a row the rule cannot decide against its threshold "
                                      "(inconclusive: listed without this flag, exit 0 within the threshold, 3 past "
                                      "it)"),
            ("--allow-undecided", "exit 0, not 3, when nothing regressed but a row past its threshold could not be "
                                  "decided (noise, too few rounds, CPU contention): the rows are still listed"),
            ("--no-claims", "do not check generation claims when the runs are on different device generations")):
        p.add_argument(flag, action="store_true", help=text)
    p.add_argument("--baseline", metavar="RUN", default=None,
                   help="the baseline, e.g. from the results store: 'generation=h100 best', latest, run=12 (then give "
                        "only the current run)")
    p.set_defaults(two_runs=True)
    return p


def _header(labels: Sequence[str], runs: Sequence[Run], thresholds: Thresholds | None = None) -> str:
    text = " · ".join(f"{label}: {run.source} ({len(run.records)} benchmark(s))" for label, run in zip(labels, runs))
    return text + (f" · thresholds: {thresholds.id} · {thresholds.run_noise.label}" if thresholds else "")


def verdict_counts(comparison: Any) -> dict[str, dict[str, int]]:
    """Gated rows by verdict and by basis: ``{"regressed": {"interval": 1, "point": 0, ...}, ...}``."""
    from pytest_genai.report.compare import EXACT, INTERVAL, POINT, VERDICTS

    out = {v: {b: 0 for b in (INTERVAL, EXACT, POINT)} for v in VERDICTS}
    for m in (m for pc in comparison.pairs for m in pc.metrics if m.verdict is not None):
        out[m.verdict][m.basis] += 1
    return out


def _counts(comparison: Any) -> str:
    from pytest_genai.report.compare import BASELINE_UNUSABLE, NOT_FINITE, UNITS_DIFFER

    nb, nc = len(comparison.only_baseline), len(comparison.only_current)
    unmatched = f"{nb + nc} unmatched" + (f" ({nb} baseline only, {nc} current only)" if nb + nc else "")
    not_finite, unusable, refused = (len(comparison.metrics_where(s)) for s in (NOT_FINITE, BASELINE_UNUSABLE,
                                                                                  UNITS_DIFFER))
    counts = verdict_counts(comparison)

    def count(verdict: str, label: str, less: int = 0) -> str:
        on_intervals = counts[verdict]["interval"]
        return (f"{sum(counts[verdict].values()) - less} {label}"
                + (f" ({on_intervals} on intervals)" if on_intervals else ""))

    words = [count("regressed", "regressed", not_finite)] + ([f"{not_finite} not finite"] if not_finite else [])
    words += [count("improved", "improved past the threshold"), count("unchanged", "unchanged"),
              count("inconclusive", "inconclusive")]
    point = sum(c["point"] for c in counts.values())
    text = (f"{len(comparison.pairs)} benchmark(s) compared, {unmatched}; {comparison.gated_count} gated metric "
            f"value(s): {', '.join(words)}"
            + (f"; {point} judged on two values without rounds (point comparison)" if point else ""))
    text += f"; {refused} refused (units differ)" if refused else ""
    return text + (f"; {unusable} baseline value(s) unusable (nan/inf, not gated)" if unusable else "")


def _summary_sections(comparison: Any, *, rows: bool, regressions: bool, skip_baseline_only: bool = False) -> list[str]:
    """The summary's tables; ``rows``: improvements and unusable baselines (not needed when every row is printed)."""
    from pytest_genai.report.compare import BASELINE_UNUSABLE, FAILING, INCONCLUSIVE, UNITS_DIFFER
    from pytest_genai.report.views import comparison_table, one_sided_table

    def section(title: str, where: Callable[[Any], bool], shown: bool = True) -> list[str]:
        if not (shown and rows and any(where(m) for pc in comparison.pairs for m in pc.metrics)):
            return []
        return [title, comparison_table(comparison, where=where).to_markdown()]

    parts = section("Regressed beyond the threshold (or not finite):", lambda m: m.status in FAILING, regressions)
    stack = comparison.stack_differences  # the software-stack items that differ (machine_info.genai.stack)
    if stack:
        parts += ["Software stack differences (baseline -> current):", "\n".join(f"- {line}" for line in stack)]
    parts += section("Improved past the threshold (a real change, or a noisy baseline?):",
                     lambda m: m.improved_past_limit)
    parts += section("Inconclusive (the rounds' interval cannot decide against the threshold; --strict-inconclusive "
                     "makes these fail the gate):", lambda m: m.status == INCONCLUSIVE)
    parts += section("Refused (recorded in units with no known conversion; not compared):",
                     lambda m: m.status == UNITS_DIFFER, not regressions)
    parts += section("Baseline value unusable (nan/inf; not gated):", lambda m: m.status == BASELINE_UNUSABLE)
    if (comparison.only_baseline and not skip_baseline_only) or comparison.only_current:
        table = one_sided_table(comparison.only_baseline, comparison.only_current,
                                list_baseline=not skip_baseline_only)
        parts += ["Benchmarks present on one side only:", table.to_markdown()]
    found = comparison.environment_differences
    if found:
        lines = [f"- {text} ({n} of {len(comparison.pairs)} paired benchmark(s))"
                 for text, n in found[:MAX_ENVIRONMENT_LINES]]
        if len(found) > MAX_ENVIRONMENT_LINES:
            lines.append(f"- and {len(found) - MAX_ENVIRONMENT_LINES} more difference(s)")
        parts += ["Environment differences (where and how the runs ran; not part of a benchmark's identity, so these "
                  "benchmarks are paired anyway):", "\n".join(lines)]
    return parts


_ALL_HINT = "(--all prints every compared metric)"
MAX_ENVIRONMENT_LINES = 12  # the rest are counted


def _export(args: argparse.Namespace, comparison: Any, thresholds: Thresholds, extra: Mapping[str, Any]) -> None:
    """--format csv|json of a two-run compare or gate: the summary's rows (every row with --all), raw numbers."""
    from pytest_genai.report.compare import FAILING, INCONCLUSIVE
    from pytest_genai.report.export import comparison_rows, json_text, rows_csv

    rows = comparison_rows(comparison, None if args.all else lambda mc: (
        mc.status in FAILING or mc.status == INCONCLUSIVE or mc.improved_past_limit))
    emit(rows_csv(rows) if args.format == "csv" else json_text({
        "baseline": comparison.baseline.source, "current": comparison.current.source, "thresholds": thresholds.id,
        "counts": _counts(comparison), "verdicts": verdict_counts(comparison), **extra, "rows": rows,
        "only_baseline": [r.label for r in comparison.only_baseline],
        "only_current": [r.label for r in comparison.only_current],
        "stack_differences": comparison.stack_differences}), args.output)


def _compare(args: argparse.Namespace) -> int:
    from pytest_genai.report.compare import compare_runs
    from pytest_genai.report.export import csv_text, json_text
    from pytest_genai.report.multi import as_json, compare_many, flat_rows, headers, markdown_table
    from pytest_genai.report.views import comparison_table

    thresholds, info, runs = _prepare(args)
    if len(runs) > 2 or args.metric:  # one side-by-side table, ratios to the first (:mod:`.multi`)
        mc = compare_many(runs, args.metric)
        if args.format == "md":
            emit("\n\n".join([
                "## pytest-genai compare", _header(mc.labels, runs),
                markdown_table(mc).to_markdown() if mc.rows else "No metric to show.",
                f"{len(mc.rows)} row(s); ratios are to the first run ({mc.labels[0]}); {mc.unmatched[0]} benchmark(s) "
                f"of the first run in no other run, {sum(mc.unmatched[1:])} benchmark(s) of later runs with no "
                "counterpart in the first (not shown)"]), args.output)
        else:
            emit(csv_text(headers(mc), flat_rows(mc)) if args.format == "csv" else json_text(as_json(mc)), args.output)
        return EXIT_OK
    baseline, current = runs
    comparison = compare_runs(baseline, current, info, thresholds)
    if args.format != "md":
        _export(args, comparison, thresholds, {})
        return EXIT_OK
    parts = ["## pytest-genai compare", _header(("baseline", "current"), runs, thresholds)]
    if not comparison.pairs:
        parts.append("No benchmark of the current run matches one of the baseline by (experiment, config identity, "
                     "model).")
    elif args.all:
        parts.append(comparison_table(comparison).to_markdown())
    parts += _summary_sections(comparison, rows=not args.all, regressions=True)
    parts.append(_counts(comparison) + ("" if args.all else " " + _ALL_HINT))
    emit("\n\n".join(parts), args.output)
    return EXIT_OK


def compare_main(argv: Sequence[str] | None = None) -> int:
    return run_command(functools.partial(_pair_parser, gate=False), _compare, argv)


def _gate(args: argparse.Namespace) -> int:
    from pytest_genai.report.compare import MISSING_BASELINE, MISSING_CURRENT
    from pytest_genai.report.gate import gate_runs
    from pytest_genai.report.views import comparison_table, generation_table

    thresholds, info, (baseline, current) = _prepare(args)  # run_command has refused anything but two runs
    try:  # pytest_genai.claims is imported above, so only its data can fail here
        claims = [] if args.no_claims else [c for c in load_claims() if c.kind == "generation"]
    except Exception as exc:  # malformed claims data must not let a gate pass silently
        raise ReportInputError(f"claims data could not be loaded: {exc} (or pass --no-claims)") from None
    result = gate_runs(baseline, current, info, thresholds, claims, strict=args.strict,
                       allow_missing=args.allow_missing, strict_inconclusive=args.strict_inconclusive,
                       allow_undecided=args.allow_undecided)
    comparison = result.comparison
    if not comparison.pairs:
        raise ReportInputError(f"no benchmark of {current.source} matches one of {baseline.source} by (experiment, "
                               "config, model): nothing to gate — were both runs made with the same selection and "
                               "configs?")
    code = result.exit_code
    if args.format != "md":
        _export(args, comparison, thresholds, {
            "verdict": {EXIT_REGRESSION: "fail", EXIT_UNDECIDED: "undecided"}.get(code, "pass"), "exit_code": code,
            "failures": [{"benchmark": f.benchmark, "device": f.device, "metric": f.metric, "why": f.reason}
                         for f in result.failures],
            **{key: [{"benchmark": pc.pair.current.label, "metric": m.metric, "why": m.note} for pc, m in found]
               for key, found in (("undecided", result.undecided), ("inconclusive", result.inconclusive))},
            "strict_inconclusive": args.strict_inconclusive, "allow_undecided": args.allow_undecided,
            "generation_checks": [dict(vars(c)) for c in result.generation_checks], "notes": list(result.notes)})
        return code
    headline, verdict = _verdict(result, code, _counts(comparison), args.strict_inconclusive)
    parts = [headline, "## pytest-genai gate", _header(("baseline", "current"), (baseline, current), thresholds)]
    if args.all:
        parts.append(comparison_table(comparison, strict=args.strict, allow_missing=args.allow_missing).to_markdown())
    if result.generation_checks:
        parts += ["### Hardware-upgrade claims", generation_table(result.generation_checks).to_markdown()]
    # baseline-only benchmarks are failures unless --allow-missing: then they are listed with the failures
    parts += _summary_sections(comparison, rows=not args.all, regressions=False,
                               skip_baseline_only=not args.allow_missing)
    parts += [f"Note: {n}" for n in result.notes]
    one_sided = comparison.metrics_where(MISSING_CURRENT, MISSING_BASELINE)
    missing_optional = [(pc, m) for pc, m in one_sided if m.optional]
    if missing_optional:
        parts.append("Optional metrics recorded on one side only (listed, not failed): " + "; ".join(
            f"{pc.pair.current.label} {m.metric} ({m.status})" for pc, m in missing_optional))
    parts += verdict
    if not args.all:
        parts.append(_ALL_HINT)
    emit("\n\n".join(parts), args.output)
    return code


_UNDECIDED_CAUSES = (  # (words of an undecided row's note, the cause the headline names), first match wins
    ("under contention", "CPU contention"), ("without rounds", "values without rounds"),
    ("reference kernel", "the machine's own drift"), ("divides by a peak", "the machine's own drift"),
    ("noise between launches", "noise between launches"),
    ("rows this gate tested (Holm", "the many rows tested (Holm)"),
)


def _verdict(result: Any, code: int, counts: str, strict_inconclusive: bool) -> tuple[str, list[str]]:
    """The gate's first line (its verdict, and for an undecided one, how many rows, why, and what to do) and its
    closing parts (the verdict with the counts)."""
    from pytest_genai.report.views import failures_table

    undecided, listed = result.undecided, len(result.inconclusive)
    if code == EXIT_REGRESSION:
        return (f"**FAIL** (exit 1): {len(result.failures)} failure(s), listed below",
                [f"**FAIL**: {len(result.failures)} failure(s): regressed metrics, failed generation claims or missing "
                 "benchmarks" + (", inconclusive rows (--strict-inconclusive)" if strict_inconclusive else ""),
                 failures_table(result).to_markdown(), counts])
    if not undecided:
        return ("**PASS** (exit 0): no regression"
                + (f"; {listed} inconclusive row(s) within the threshold listed below" if listed else ""),
                [f"**PASS**: {counts}; no regression" + (f" decided; {listed} inconclusive row(s) within the threshold "
                                                          "listed above (--strict-inconclusive fails them)"
                                                          if listed else "")])
    causes = Counter(next((cause for words, cause in _UNDECIDED_CAUSES if words in m.note),
                          "noise for the rounds recorded") for _, m in undecided).most_common()
    why = ", ".join(f"{n} by {cause}" for cause, n in causes)
    head = "**UNDECIDED** (exit 3)" if code == EXIT_UNDECIDED else "**UNDECIDED, allowed** (exit 0, --allow-undecided)"
    remedy = ("rerun both sides on an idle machine" if "CPU contention" in dict(causes) else
              "gate against several runs (--baseline 'last:3'): more rounds do not shrink the noise between "
              "launches" if causes[0][0] == "noise between launches" else
              "record more rounds a side (--genai-rounds auto) or gate against several runs (--baseline 'last:3')")
    return (f"{head}: nothing regressed, but {len(undecided)} row(s) past the threshold could not be decided "
            f"({why}); {remedy}",
            [f"**UNDECIDED**: {counts}; no regression decided; {len(undecided)} row(s) past the threshold undecided, "
             "listed above" + (" (--allow-undecided: exit 0)" if code == EXIT_OK else "")])


def gate_main(argv: Sequence[str] | None = None) -> int:
    return run_command(functools.partial(_pair_parser, gate=True), _gate, argv)
