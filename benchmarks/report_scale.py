"""Scale check of the report and the store (a script, not a test: it takes a minute and its bounds are wall-clock).

``python3 benchmarks/report_scale.py [--benchmarks 25000] [--store-benchmarks 3600]``

1. ``pytest-genai report`` of one run with ``--benchmarks`` benchmarks (each with a claim verdict, three metrics and
   a config with a long id, so that the claims tables name rows by the parts of their ids that differ), in a child
   process: its wall time and peak RSS (``ru_maxrss`` of the child, measured) against the bounds below.
2. ``pytest-genai store add`` of a run with ``--store-benchmarks`` benchmarks into a new SQLite store: wall time.

Bounds (target: ours, from the reliability issue): the report of 25,000 benchmarks in under 30 s and 2 GB. Before
the claims tables computed the shortened names once per table (they did per row, over all rows), 1,800 benchmarks
took 3.6 s, 7,200 took 30.8 s and 25,000 were killed at 240 s (measured on the 2-core CI machine).
Exit 0 when every bound holds, 1 otherwise; one line per measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPORT_SECONDS = 30.0
"""Target: the report of 25,000 benchmarks within this wall time."""
REPORT_BYTES = 2 * 1024 ** 3
"""Target: ... and within this peak resident memory."""

MODES = ("fp32", "fake", "real", "real4")
TASKS = ("wikitext", "hellaswag", "boolq", "arc_easy", "piqa")


def benchmark(i: int, tests: int) -> dict[str, Any]:
    """One benchmark as the JSON contract writes it (``extra_info["genai"]``), with one claim verdict."""
    test = f"test_quantized_model_quality_{i % tests}"
    mode, task = MODES[i % len(MODES)], TASKS[(i // len(MODES)) % len(TASKS)]
    ident = f"smollm2-135m-cpu-{mode}-{task}-group{i // 20}-seed{i}"
    ppl = 15.0 + (i % 97) / 10
    genai = {"schema": "pytest-genai/1", "experiment": "quant", "model": "smollm2-135m",
             "device": {"kind": "cpu", "generation": "cpu", "name": "CPU"},
             "config": {"id": ident, "mode": mode, "task": task, "group": i // 20, "seed": i},
             "metrics": {"perplexity": ppl, "tokens_per_s": 1000.0 + i % 500, "compression_ratio": 1.0 + i % 4},
             "metric_sources": {"perplexity": "measured", "tokens_per_s": "measured", "compression_ratio": "measured"},
             "metric_units": {"perplexity": "1", "tokens_per_s": "tokens/s", "compression_ratio": "x"},
             "claims": [{"id": "A1.ppl_ratio", "metric": "ppl_ratio", "measured": ppl / 15.0, "min": None,
                         "max": 1.035, "paper": 1.0308, "verdict": "pass" if ppl < 15.5 else "fail",
                         "message": "ratio to fp32", "basis": "paper", "interval": None}],
             "labels": {}, "attachments": {}}
    name = f"{test}[{ident}]"
    return {"name": name, "fullname": f"benchmarks/test_quantization.py::{name}", "group": None,
            "param": ident, "params": {"cfg": ident}, "extra_info": {"genai": genai}, "options": {},
            "stats": {"min": 0.01, "max": 0.02, "mean": 0.015, "median": 0.015, "stddev": 0.001, "rounds": 5,
                      "iterations": 1, "iqr": 0.001, "q1": 0.014, "q3": 0.016, "ops": 66.0, "total": 0.075,
                      "outliers": "0;0", "ld15iqr": 0.01, "hd15iqr": 0.02, "iqr_outliers": 0, "stddev_outliers": 0}}


def run_document(n: int, tests: int = 4) -> dict[str, Any]:
    return {"machine_info": {"genai": {"devices": [{"kind": "cpu", "generation": "cpu"}]}}, "commit_info": {},
            "benchmarks": [benchmark(i, tests) for i in range(n)], "datetime": "2026-12-03T00:00:00",
            "version": "5.2.3"}


def timed(argv: list[str], cwd: Path) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall seconds and peak RSS bytes of one child (``ru_maxrss``: KiB on Linux), measured."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) * 1024, done


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmarks", type=int, default=25_000)
    p.add_argument("--store-benchmarks", type=int, default=3_600)
    args = p.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="genai-scale-") as tmp:
        work = Path(tmp)
        (work / "run.json").write_text(json.dumps(run_document(args.benchmarks)))
        seconds, peak, done = timed([sys.executable, "-m", "pytest_genai.cli", "report", "run.json", "-o", "r.md"],
                                    work)
        fine = done.returncode == 0 and seconds < REPORT_SECONDS and peak < REPORT_BYTES
        ok &= fine
        print(f"report of {args.benchmarks} benchmarks: {seconds:.1f} s (target < {REPORT_SECONDS:g} s), peak RSS "
              f"{peak / 1024 ** 2:.0f} MiB (target < {REPORT_BYTES / 1024 ** 3:g} GiB), exit {done.returncode}: "
              + ("ok" if fine else "FAIL " + done.stderr.strip()[-300:]))
        (work / "store.json").write_text(json.dumps(run_document(args.store_benchmarks)))
        seconds, _, done = timed([sys.executable, "-m", "pytest_genai.cli", "store", "add", "store.json", "--store",
                                  str(work / "s.sqlite")], work)
        ok &= done.returncode == 0
        print(f"store add of {args.store_benchmarks} benchmarks: {seconds:.1f} s, exit {done.returncode}"
              + ("" if done.returncode == 0 else " " + done.stderr.strip()[-300:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
