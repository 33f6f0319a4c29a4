"""Do same-code repeats of a cross-launch comparison agree? The intervals' pairwise overlap on the CPU.

Runs the tiny Gemma-2 architecture A2 comparison (DDP over FSDP, full fine-tune, 2 gloo ranks: the row that judges
``A2.ddp_vs_fsdp`` on the CPU) ``--repeats`` times with the same code, each repeat the benchmark's own design:
``--per-side`` launches a side in :class:`pytest_genai.train.launches.LaunchPlan` order, judged by
:func:`pytest_genai.train.launches.compare_launches` (two-stage bootstrap over launches, then steps). For every
pair of repeats it asks whether their 95% intervals overlap; the target is at least 95% of pairs. For contrast
it scores the design this replaced on the same launches: one launch a side (each repeat's first sharded and first
DDP job), the bootstrap over their steps only.

    nice -n 5 env OMP_NUM_THREADS=1 python3 scripts/launch_overlap.py --repeats 10 --json docs/results/launch_overlap.json

Every job's timed steps are kept in the JSON, so the numbers can be recomputed without launching. Exit 1 when the
overlap target is missed.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.95


def overlaps(a: dict, b: dict) -> bool:
    return max(a["lo"], b["lo"]) <= min(a["hi"], b["hi"])


def pair_overlap(intervals: list[dict]) -> tuple[int, int]:
    """(overlapping pairs, pairs) over every pair of intervals."""
    pairs = list(itertools.combinations(intervals, 2))
    return sum(overlaps(a, b) for a, b in pairs), len(pairs)


def score(repeats: list[dict]) -> dict:
    """The overlap of the cross-launch intervals and of the one-launch-a-side intervals, from the jobs' steps."""
    from pytest_genai.stats import bootstrap_ratio_interval
    from pytest_genai.train.launches import compare_launches

    launches, single = [], []
    for rep in repeats:
        c = compare_launches(rep["sharded_steps"], rep["ddp_steps"])
        launches.append({"ratio": c.ratio, **c.interval.to_json()})
        one = bootstrap_ratio_interval(rep["sharded_steps"][0], rep["ddp_steps"][0])
        single.append(one.to_json())
    out = {}
    for name, intervals in (("launches", launches), ("one_launch_a_side", single)):
        hit, n = pair_overlap(intervals)
        out[name] = {"intervals": intervals, "overlapping_pairs": hit, "pairs": n, "share": hit / n}
    return out


def measure(repeats: int, per_side: int, work: Path) -> list[dict]:
    from pytest_genai.runtime.launcher import LaunchSpec
    from pytest_genai.train.config import benchmark_matrix
    from pytest_genai.train.launches import LaunchPlan, compare_launches, interleave
    from pytest_genai.train.run import run

    tiny = benchmark_matrix("tiny", ("full",))
    sharded = next(c for c in tiny if c.model == "gemma-2-27b" and c.strategy == "fsdp")
    ddp = dataclasses.replace(sharded, strategy="ddp")
    spec = LaunchSpec.from_env(nproc=2)
    plan = LaunchPlan(per_side)
    counter = itertools.count()

    def job(cfg):
        return lambda: run(cfg, "cpu", spec, work / f"{next(counter)}-{cfg.strategy}")

    out = []
    for i in range(repeats):
        start = time.monotonic()
        runs, bases = interleave(plan, job(sharded), job(ddp))
        out.append({"sharded_steps": [list(r.timed_step_s) for r in runs],
                    "ddp_steps": [list(b.timed_step_s) for b in bases],
                    "wall_s": time.monotonic() - start, "loadavg_after": os.getloadavg()[0]})
        c = compare_launches(out[-1]["sharded_steps"], out[-1]["ddp_steps"])
        print(f"repeat {i + 1}/{repeats}: DDP/FSDP {c.ratio:.3f} [{c.interval.lo:.3f}, {c.interval.hi:.3f}] "
              f"({out[-1]['wall_s']:.0f} s, load {out[-1]['loadavg_after']:.1f})", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--per-side", type=int, default=None, help="launches a side (default: the small/full plan)")
    parser.add_argument("--json", type=Path, help="write every job's steps and the overlap here")
    parser.add_argument("--rescore", type=Path, help="score the repeats of an earlier --json without launching")
    args = parser.parse_args(argv)
    from pytest_genai.train.launches import MIN_JUDGING

    if args.rescore:
        data = json.loads(args.rescore.read_text(encoding="utf-8"))
        repeats = data["repeats"]
    else:
        if args.repeats < 2:
            parser.error("--repeats must be at least 2: overlap is over pairs of repeats")
        per_side = args.per_side or MIN_JUDGING
        with tempfile.TemporaryDirectory(prefix="launch-overlap-") as tmp:
            repeats = measure(args.repeats, per_side, Path(tmp))
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
        data = {"what": "tiny gemma-2-27b architecture (random weights), DDP over FSDP, full fine-tune, 2 gloo "
                        "ranks, OMP_NUM_THREADS=1 per rank",
                "per_side": per_side, "commit": commit, "cpu": platform.processor() or platform.machine(),
                "cores": os.cpu_count(), "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                "repeats": repeats}
    data["score"] = score(repeats)
    if args.json and not args.rescore:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for name, s in data["score"].items():
        print(f"{name}: {s['overlapping_pairs']}/{s['pairs']} pairs overlap ({s['share']:.0%})")
    share = data["score"]["launches"]["share"]
    if share < TARGET:
        print(f"target missed: the cross-launch intervals overlap in {share:.0%} of pairs, under {TARGET:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
