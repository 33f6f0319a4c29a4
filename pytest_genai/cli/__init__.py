"""The ``pytest-genai`` command. Each subcommand lives in its own module, imported on first use."""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from typing import Callable, Sequence

#: subcommand -> ("module:function", one-line help). Functions take argv and return an exit code.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "devices": ("pytest_genai.cli:devices_main", "list detected devices with their specs, and why the others are absent"),
    "claims": ("pytest_genai.cli:claims_main", "list the papers' claims (bounds, scope, source)"),
    "report": ("pytest_genai.cli.report:report_main", "tables and plots from a --benchmark-json file (md or html)"),
    "compare": ("pytest_genai.cli.report:compare_main", "per-metric ratios between two runs, or N runs side by side"),
    "gate": ("pytest_genai.cli.report:gate_main", "exit 1 if the current run regressed against the baseline"),
    "store": ("pytest_genai.cli.store:main", "the results store: `store add RUN.json|.benchmarks...`, `store list`"),
    "history": ("pytest_genai.cli.history:history_main", "a metric across the stored runs: table and trend plot"),
    "plan": ("pytest_genai.train.cli:main", "memory fit planner: which parallel strategy fits a model on a device"),
    "data": ("pytest_genai.evals.fetch:main", "`data fetch DIR`: download the evaluation data for --genai-data-dir"),
    "cache": ("pytest_genai.evals.cache_cli:main", "`cache info` / `cache clear`: the converted-model cache"),
    "reference": ("pytest_genai.cli.reference:main", "published vendor numbers: rows, runs, generation claims, verdicts"),
}


def _load(target: str) -> Callable[[list[str]], int]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: pytest-genai {" + ",".join(SUBCOMMANDS) + "} ...\n")
        for name, (_, text) in SUBCOMMANDS.items():
            print(f"  {name:<8} {text}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"pytest-genai: unknown command {name!r}; choose from {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    try:
        code = int(_load(SUBCOMMANDS[name][0])(rest) or 0)
        sys.stdout.flush()  # here, not at exit: a reader that went away is then this handler's, not a traceback's
        return code
    except BrokenPipeError:  # piped into `head`: exit 0 quietly, as coreutils do
        quiet_stdout()
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line, never a traceback (outputs are written atomically: none is half)
        print(f"pytest-genai {name}: interrupted", file=sys.stderr)
        return 130


def quiet_stdout() -> None:
    """Point stdout at /dev/null after its reader went away, so the flush at exit raises no second BrokenPipeError."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is no file (captured, or already closed)
        pass


def devices_main(argv: list[str]) -> int:
    from pytest_genai.devices import detect_all
    from pytest_genai.tables import text_table

    parser = argparse.ArgumentParser(prog="pytest-genai devices", description=SUBCOMMANDS["devices"][1])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-measure", action="store_true", help="do not measure the CPU's peaks")
    args = parser.parse_args(argv)
    results = detect_all()
    found, absent, broken = [], {}, {}
    for kind, result in results.items():
        if result.broken:
            broken[kind] = result.error
        elif not result.available:
            absent[kind] = result.reason
        for device in result.devices:
            if device.kind == "cpu" and not args.no_measure:
                from pytest_genai.devices.cpu_probe import measure_cpu_spec

                device = dataclasses.replace(device, spec=measure_cpu_spec())
            found.append(device)
    if args.json:
        print(json.dumps({"devices": [d.to_json() for d in found], "absent": absent, "broken": broken}, indent=2))
        return 1 if broken else 0
    rows = [[d.id, d.generation, d.name,
             ", ".join(f"{k} {v:.3g}" for k, v in (spec.peak_tflops_by_dtype.items() if spec else [])) or "unknown",
             f"{spec.mem_bandwidth_gbs:.4g}" if spec and spec.mem_bandwidth_gbs else "unknown",
             spec.source if spec else "no spec for this generation"] for d in found for spec in [d.spec]]
    print("\n".join(text_table(["device", "generation", "name", "peak TFLOP/s", "mem GB/s", "source"], rows)) + "\n")
    for kind, reason in absent.items():
        print(f"{kind}: absent: {reason}")
    for kind, error in broken.items():
        print(f"{kind}: broken: the probe failed with {error}")
    return 1 if broken else 0


def claims_main(argv: list[str]) -> int:
    from pathlib import Path

    from pytest_genai.claims import ClaimsError, load_claims
    from pytest_genai.claims.model import BASES
    from pytest_genai.tables import text_table

    parser = argparse.ArgumentParser(prog="pytest-genai claims", description=SUBCOMMANDS["claims"][1])
    parser.add_argument("--paper", help="only this paper's claims (A or B)")
    parser.add_argument("--basis", choices=BASES, help="only claims of this basis")
    parser.add_argument("--dir", help="load claims from this folder instead of the packaged data")
    parser.add_argument("--coverage", nargs="?", const="benchmarks", metavar="BENCHMARKS_DIR",
                        help="also list the benchmark that checks each claim and on which device kinds, read from the "
                             "benchmarks' @pytest.mark.claims markers (default folder: ./benchmarks)")
    parser.add_argument("--reference", action="store_true",
                        help="also list the reference claims made from the shipped published rows (pytest-genai "
                             "reference); implied by --basis reference")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        claims = load_claims(args.dir)
    except (ClaimsError, ValueError, OSError) as exc:
        print(f"pytest-genai claims: {exc}", file=sys.stderr)
        return 2
    if args.reference or args.basis == "reference":
        from pytest_genai.reference.claims import counterparts
        from pytest_genai.reference.sources import load_all

        claims += [c.claim() for c in counterparts(load_all())]
    if args.paper:
        papers = sorted({c.paper for c in claims})
        claims = [c for c in claims if c.paper.lower() == args.paper.lower()]
        if not claims:  # an empty table and exit 0 read as "nothing to check"
            print(f"pytest-genai claims: --paper {args.paper}: no claims of that paper; use one of "
                  f"{', '.join(papers) or '(none loaded)'}", file=sys.stderr)
            return 2
    if args.basis:
        claims = [c for c in claims if c.basis == args.basis]
    checked: dict[str, list[str]] = {}
    if args.coverage:
        from pytest_genai.claims.coverage import checked_on, checkers_by_claim, collect

        if not Path(args.coverage).is_dir():
            print(f"pytest-genai claims: --coverage {args.coverage}: not a folder; give the benchmarks folder of a "
                  "pytest-genai checkout", file=sys.stderr)
            return 2
        try:
            by_claim = checkers_by_claim(collect(args.coverage))
        except (RuntimeError, OSError) as exc:
            print(f"pytest-genai claims: {exc}", file=sys.stderr)
            return 2
        checked = {c.id: checked_on(c, by_claim.get(c.id, [])) for c in claims}
    # a reference claim is checked by `pytest-genai reference check` on a run, never by a benchmark's marker
    dead = [c.id for c in claims if args.coverage and not checked[c.id] and c.basis != "reference"]
    if args.json:  # the same exit status as the table's: a dead claim is 1 either way
        out = [{**dataclasses.asdict(c), **({"checked_by": checked[c.id]} if args.coverage else {})} for c in claims]
        print(json.dumps(out, indent=2, default=list))
        return 1 if dead else 0
    rows = [[c.id, c.basis, c.metric, c.bound_text(), "" if c.paper_value is None else f"{c.paper_value:g}",
             ",".join(c.devices) or "any",
             f"{c.from_generation}->{c.to_generation}" if c.kind == "generation" else ",".join(c.models) or "any"]
            + (["; ".join(checked[c.id]) or "NONE (dead claim)"] if args.coverage else []) for c in claims]
    headers = ["claim", "basis", "metric", "bound", "paper", "devices", "models / generations"]
    print("\n".join(text_table(headers + (["checked by [kinds]"] if args.coverage else []), rows)))
    if dead:
        print(f"{len(dead)} dead claim(s): no benchmark checks {', '.join(dead)}", file=sys.stderr)
        return 1
    return 0
