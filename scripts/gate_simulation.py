"""The gate's error rates by simulation: how often :func:`pytest_genai.report.decision.decide` calls a regression.

Each cell draws ``--trials`` pairs of runs of a lower-is-better timing (lognormal rounds with the cell's coefficient of
variation, the current side's median multiplied by ``1 + change``) and decides each pair with the gate's own rule at
the cell's threshold. The table gives, per threshold, rounds a side and spread, the share of pairs read

* ``regressed`` at every true change (at change 0: the false alarms; past the threshold: the detections);
* ``passed``: read unchanged or improved, or inconclusive with the estimate within the threshold (exit 0).

    python3 scripts/gate_simulation.py                 # the table (markdown), seed 20261206, 2000 trials a cell
    python3 scripts/gate_simulation.py --json out.json

Targets (the gate issue): at most 1% false alarms at every n and spread (a cell misses it where the rate's one-sided
99% lower bound is past 1%); a change of twice the threshold detected in at
least 95% of pairs at CV <= 5% and n >= 3; a 10x change detected at n = 2. The exit status is 1 where one is missed;
each miss is named.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass

ROUNDS = (2, 3, 5, 10, 30)
CVS = (0.01, 0.05, 0.20)
CHANGES = (0.0, 0.05, 0.10, 0.15, 0.20, 0.30, 0.50, 9.0)
THRESHOLDS = (0.05, 0.10)
SEED = 20261206
TRIALS = 2000


@dataclass(frozen=True)
class Cell:
    threshold: float
    n: int
    cv: float
    change: float
    trials: int
    regressed: int
    passed: int

    @property
    def regressed_share(self) -> float:
        return self.regressed / self.trials

    @property
    def passed_share(self) -> float:
        return self.passed / self.trials


def change_label(change: float) -> str:
    return f"{change + 1:g}x" if change >= 1 else f"{change:.0%}"


def simulate_cell(threshold: float, n: int, cv: float, change: float, trials: int, seed: int) -> Cell:
    from pytest_genai.report.decision import INCONCLUSIVE, REGRESSED, decide

    rng = random.Random(f"{seed}:{threshold}:{n}:{cv}:{change}")
    sigma = math.sqrt(math.log1p(cv * cv))
    shift = math.log1p(change)
    regressed = passed = 0
    for _ in range(trials):
        base = [math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]
        cur = [math.exp(rng.gauss(shift, sigma)) for _ in range(n)]
        d = decide(base, cur, "lower", threshold, interval=False)
        regressed += d.verdict == REGRESSED
        passed += d.verdict != REGRESSED and not (d.verdict == INCONCLUSIVE and d.past_margin)
    return Cell(threshold, n, cv, change, trials, regressed, passed)


LAUNCH_SDS = (0.0, 0.07, 0.23)
LAUNCH_CHANGES = (0.0, 0.30, 9.0)


@dataclass(frozen=True)
class LaunchCell:
    launch_sd: float
    floor: float
    change: float
    trials: int
    regressed: int
    passed: int


def simulate_launches(trials: int = TRIALS, seed: int = SEED, sds=LAUNCH_SDS, changes=LAUNCH_CHANGES,
                      n: int = 5, cv: float = 0.05, threshold: float = 0.05) -> list[LaunchCell]:
    """Two single runs whose log means also move between launches (a normal effect of SD ``launch_sd`` a run, on top
    of the rounds' own spread), judged with the gate's run noise set to 0 (rounds alone) and to ``launch_sd``."""
    from pytest_genai.report.decision import INCONCLUSIVE, REGRESSED, decide

    sigma = math.sqrt(math.log1p(cv * cv))
    out = []
    for sd in sds:
        for floor in sorted({0.0, sd}):
            for change in changes:
                rng = random.Random(f"{seed}:launch:{sd}:{floor}:{change}")
                regressed = passed = 0
                for _ in range(trials):
                    eb, ec = rng.gauss(0.0, sd), rng.gauss(math.log1p(change), sd)
                    base = [math.exp(eb + rng.gauss(0.0, sigma)) for _ in range(n)]
                    cur = [math.exp(ec + rng.gauss(0.0, sigma)) for _ in range(n)]
                    d = decide(base, cur, "lower", threshold, interval=False, run_noise=floor)
                    regressed += d.verdict == REGRESSED
                    passed += d.verdict != REGRESSED and not (d.verdict == INCONCLUSIVE and d.past_margin)
                out.append(LaunchCell(sd, floor, change, trials, regressed, passed))
    return out


def launch_table(cells: list[LaunchCell]) -> str:
    changes = sorted({c.change for c in cells})
    head = ["launch SD", "run noise given"] + [f"{change_label(ch)} regressed" for ch in changes] + ["10x passed"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(c.launch_sd, c.floor, c.change): c for c in cells}
    for sd, floor in sorted({(c.launch_sd, c.floor) for c in cells}):
        row = [f"{sd:g}", f"{floor:g}"] + [f"{by[(sd, floor, ch)].regressed / by[(sd, floor, ch)].trials:.1%}"
                                           for ch in changes]
        top = by[(sd, floor, max(changes))]
        lines.append("| " + " | ".join(row + [f"{top.passed / top.trials:.1%}"]) + " |")
    return "\n".join(lines)


def simulate(trials: int = TRIALS, seed: int = SEED, rounds=ROUNDS, cvs=CVS, changes=CHANGES,
             thresholds=THRESHOLDS) -> list[Cell]:
    return [simulate_cell(t, n, cv, ch, trials, seed)
            for t in thresholds for n in rounds for cv in cvs for ch in changes]


def _lower_bound(k: int, n: int, level: float = 0.99) -> float:
    """One-sided Clopper-Pearson lower bound of a rate seen ``k`` times in ``n`` trials."""
    from pytest_genai.stats import binom_cdf

    if k == 0:
        return 0.0
    lo, hi = 0.0, k / n
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1 - binom_cdf(k - 1, n, mid) < 1 - level:
            lo = mid
        else:
            hi = mid
    return lo


def misses(cells: list[Cell]) -> list[str]:
    """Each target a cell misses, in words."""
    out = []
    for c in cells:
        where = f"threshold {c.threshold:.0%}, n={c.n}, CV {c.cv:.0%}"
        # the share is an estimate from c.trials pairs: a miss is a false-alarm rate whose one-sided 99% lower
        # bound is past 1%, not a count that sampling put just over it
        if c.change == 0 and _lower_bound(c.regressed, c.trials) > 0.01:
            out.append(f"{where}: {c.regressed_share:.1%} false alarms (target at most 1%)")
        two_x = abs(c.change - 2 * c.threshold) < 1e-9
        if two_x and c.cv <= 0.05 and c.n >= 3 and c.regressed_share < 0.95:
            out.append(f"{where}: a {c.change:.0%} change detected in {c.regressed_share:.1%} (target 95%)")
        if c.change >= 9 and c.n == 2 and c.regressed_share < 0.95:
            out.append(f"{where}: a 10x change detected in {c.regressed_share:.1%} (target 95%)")
    return out


def table(cells: list[Cell]) -> str:
    """Markdown: one row per threshold, n and CV; per true change, % read regressed (and % passed where any did)."""
    changes = sorted({c.change for c in cells})
    head = ["threshold", "n a side", "CV"] + [f"{change_label(ch)} regressed" for ch in changes] + ["10x passed"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = sorted({(c.threshold, c.n, c.cv) for c in cells})
    by = {(c.threshold, c.n, c.cv, c.change): c for c in cells}
    for t, n, cv in keys:
        row = [f"{t:.0%}", str(n), f"{cv:.0%}"]
        row += [f"{by[(t, n, cv, ch)].regressed_share:.1%}" for ch in changes]
        top = by.get((t, n, cv, max(changes)))
        row.append(f"{top.passed_share:.1%}" if top else "")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=TRIALS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", default=None, help="also write the cells here")
    args = ap.parse_args(argv)
    cells = simulate(args.trials, args.seed)
    print(table(cells))
    launches = simulate_launches(args.trials, args.seed)
    print("\nTwo single runs whose means also move between launches (n = 5 a side, CV 5%, threshold 5%):\n")
    print(launch_table(launches))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([c.__dict__ for c in cells], f, indent=1)
        with open(args.json.replace(".json", "_launches.json"), "w", encoding="utf-8") as f:
            json.dump([c.__dict__ for c in launches], f, indent=1)
    missed = misses(cells)
    missed += [f"launch SD {c.launch_sd:g}, run noise {c.floor:g}: {c.regressed / c.trials:.1%} false alarms "
               "(target at most 1%)" for c in launches
               if c.change == 0 and c.floor == c.launch_sd and _lower_bound(c.regressed, c.trials) > 0.01]
    for line in missed:
        print(f"missed: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
