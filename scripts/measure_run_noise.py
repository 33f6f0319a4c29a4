"""The run noise of a node: how much a run's log mean moves between launches of the same code, per experiment.

Give two or more runs of the same code on the same node (``--benchmark-json`` files, launched one after another).
For each consecutive pair, every metric both runs kept rounds for gives a log ratio; per experiment the robust standard
deviation of those log ratios (1.4826 x their median absolute deviation) over sqrt 2 (two runs in a ratio) is the
run noise. Prints a ``--run-noise`` spec for ``pytest-genai gate`` / ``--genai-run-noise`` and, with ``--toml``, the
table in the shape of ``pytest_genai/claims/data/run_noise.toml``.

    python3 scripts/measure_run_noise.py a.json b.json [c.json ...] [+ d.json e.json ...] [--toml]

``+`` starts another series (another session's runs of the same code, perhaps another commit): pairs are taken
within a series only, and the log ratios of all series are pooled.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict


def log_ratios(paths: list[str]) -> dict[str, list[float]]:
    """Per experiment, the log ratios of the metrics with rounds on both sides of each consecutive pair (a ``+``
    in ``paths`` starts a new series)."""
    from pytest_genai.report.compare import INTERVAL, compare_runs
    from pytest_genai.claims import default_metric_info
    from pytest_genai.results.runs import load_run
    from pytest_genai.report.thresholds import Thresholds

    info, _ = default_metric_info()
    runs = [None if p == "+" else load_run(p) for p in paths]
    out: dict[str, list[float]] = defaultdict(list)
    for base, cur in zip(runs, runs[1:]):
        if base is None or cur is None:
            continue
        for pair in compare_runs(base, cur, info, Thresholds()).pairs:
            for m in pair.metrics:
                if m.basis == INTERVAL and m.ratio and m.ratio > 0 and m.direction in ("higher", "lower"):
                    out[pair.pair.current.experiment or "-"].append(math.log(m.ratio))
    return dict(out)


def run_noise(ratios: list[float]) -> float:
    med = statistics.median(ratios)
    return 1.4826 * statistics.median(abs(x - med) for x in ratios) / math.sqrt(2)


def table(paths: list[str]) -> tuple[float, dict[str, tuple[float, int, float]]]:
    """(default: the median of the experiments' values rounded up to 0.01; per experiment: value, rows, largest
    absolute log ratio)."""
    per = {e: (round(run_noise(xs), 3), len(xs), max(abs(x) for x in xs))
           for e, xs in sorted(log_ratios(paths).items()) if len(xs) >= 4}
    if not per:
        raise SystemExit("measure_run_noise: no metric with rounds in both runs of a pair; give runs of the same "
                         "benchmarks (--benchmark-json files of the same command)")
    default = math.ceil(statistics.median(v for v, _, _ in per.values()) * 100) / 100
    return default, per


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="two or more --benchmark-json files of the same code, in launch order")
    ap.add_argument("--toml", action="store_true", help="print the table as run_noise.toml's entries")
    args = ap.parse_args(argv)
    if len([r for r in args.runs if r != "+"]) < 2:
        ap.error("give two or more runs of the same code")
    default, per = table(args.runs)
    print(",".join(f"{e}={v:g}" for e, (v, _, _) in per.items()) + f",*={default:g}")
    if args.toml:
        print(f"\n[default]\nvalue = {default:g}\nsource = \"measured\"")
        for e, (v, n, top) in per.items():
            print(f"\n[experiment.{e}]\nvalue = {v:g}\nsource = \"measured\"\nnote = \"{n} rows with rounds; "
                  f"largest |log ratio| {top:.2f}\"")
    return 0


if __name__ == "__main__":
    sys.exit(main())
