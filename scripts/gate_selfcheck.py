"""How often the noise-aware gate is fooled: false alarms on same-code pairs, detection of injected slowdowns.

Each case is a pair of real measured runs of the Level 1 CPU sweep's first point at tiny scale (``L2-h64-a1-s128``:
two decoder layers, hidden 64, sequence 128, fp32 forward; :mod:`pytest_genai.dabench.model`'s stack and step), each a
run of ``--rounds`` rounds of ``step_time_s`` (the median step time of the round's steps) with its CPU pressure read
from ``/proc/pressure/cpu`` (:mod:`pytest_genai.runtime.pressure`), gated by :func:`pytest_genai.report.gate.gate_runs`
exactly as ``pytest-genai gate`` gates two run files (threshold ``step_time_s=10%``, the median round time's default).

For every slowdown in ``--slowdowns`` (0 = the same code), ``--pairs`` pairs are measured: half idle, half with a CPU
burner (one spinning process per core, DECISIONS.md's "heavy job beside it") beside one side, the baseline side in
every other loaded pair. A slowdown is injected into the current side's measured step: after each step, a busy loop
for that fraction of the step's own time. The table gives per condition the rows read regressed / inconclusive /
unchanged / improved and the seconds of measurement behind each decision (both sides).

    python3 scripts/gate_selfcheck.py --pairs 10 --rounds 10 --json /tmp/selfcheck.json
    python3 scripts/gate_selfcheck.py --pairs 10 --rounds 10 --rounds-mode auto --time-budget 10
    python3 scripts/gate_selfcheck.py --pairs 10 --rounds 10 --statistic reference
    python3 scripts/gate_selfcheck.py --table /tmp/selfcheck.json   # the table of saved cases, nothing measured

``--statistic reference`` times the fixed reference kernel of :mod:`pytest_genai.runtime.reference` back to back
with each step and gates ``step_time_per_reference`` (each round's median step over the reference's median) beside the
raw ``step_time_s``, both at the threshold, as the Level 1 CPU benchmark records them: the raw row's regression
counts only where the normalized row agrees (:mod:`pytest_genai.report.compare`), and the pressure rule holds for
both. A case then reads as the gate reads the benchmark: regressed when any row fails it, else the normalized row's
verdict.

``--statistic instructions`` counts the step's instructions instead of timing it (valgrind's callgrind,
:mod:`pytest_genai.runtime.instructions`; the slowdown is a counted busy loop of that share of the step's
instructions) and gates ``step_instructions``, a statistic registered as one CPU contention does not move: idle, it
sizes the slowdowns; then a CPU burner per core runs beside the baseline, the same code and each slowdown, counted at
once, and each is gated against that baseline by the ``pytest-genai gate`` command (its exit status recorded).

    python3 scripts/gate_selfcheck.py --statistic instructions --slowdowns 0,0.3 --rounds 5 --json /tmp/instr.json

``--rounds-mode auto`` lets the baseline side add rounds until its median's interval is narrower than half the
threshold, and the current side while its gate row against the baseline reads inconclusive, each within
``--time-budget`` seconds (:func:`pytest_genai.runtime.rounds.run_rounds`, the loop behind
``--genai-rounds auto``); the table's "rounds" column says how many each side took.

Targets (the regression-gate issue): no false alarm on same-code pairs, idle or loaded; every 30 % slowdown regressed,
idle or loaded; every 15 % slowdown regressed when idle (loaded: inconclusive allowed); never ``unchanged`` on a
slowdown at or above the threshold. The exit status is 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Any

THRESHOLD = 0.10
STEPS_PER_ROUND = 20


def _burners() -> list[subprocess.Popen]:
    n = os.cpu_count() or 2
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=10)


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _spin_cpu(seconds: float) -> None:
    """Busy work until this thread has spent ``seconds`` of its own CPU time: extra work that a load beside it
    cannot shorten or lengthen."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def level1_step(extra: int = 0) -> Any:
    """The Level 1 CPU sweep's first point (``L2-h64-a1-s128`` fp32 forward, one thread) as a step for
    :func:`pytest_genai.runtime.instructions.count_step_instructions`; ``extra``: turns of a counted busy loop after
    each step (:func:`pytest_genai.runtime.instructions.busy`), the injected slowdown as instructions, not time."""
    import torch

    from pytest_genai.dabench import model
    from pytest_genai.dabench.config import DecoderConfig
    from pytest_genai.runtime.instructions import busy

    torch.set_num_threads(1)
    cfg = DecoderConfig(layers=2, hidden=64, heads=1, seq_len=128)
    dev = torch.device("cpu")
    step = model.build_stack(cfg, dev)
    forward = model.make_step(cfg, step, model.make_input(cfg, dev))

    def slowed() -> None:
        forward()
        busy(extra)

    return slowed if extra else forward


def measure_side(step: Any, rounds: int, slowdown: float, loaded: bool, policy: Any = None,
                 decided: Any = None, reference: Any = None, cpu_clock: bool = False
                 ) -> tuple[list[float], dict | None, float, Any, list[float]]:
    """``rounds`` rounds of the step's median time (s) (more under an ``auto`` ``policy`` while ``decided(rounds)``
    is false: :func:`pytest_genai.runtime.rounds.run_rounds`, as ``--genai-rounds auto`` takes them), the pressure
    reading over them, the wall seconds, the loop's outcome, and with a ``reference`` kernel each round's median step
    over the reference's median (the two timed back to back, step by step); without one, each round's median CPU
    seconds of the stepping thread (``cpu_clock``: the slowdown is then that share of the step's own CPU time)."""
    from pytest_genai.runtime.reference import step_over_reference
    from pytest_genai.runtime.pressure import Window
    from pytest_genai.runtime.rounds import run_rounds

    procs = _burners() if loaded else []
    try:
        if procs:
            time.sleep(0.3)  # let the burners reach the cores
        window = Window.open()
        start = time.perf_counter()
        out: list[float] = []
        ratios: list[float] = []
        cpu: list[float] = []

        def slowed() -> None:
            t0 = time.perf_counter()
            step()
            if slowdown:
                _spin((time.perf_counter() - t0) * slowdown)


        def one(_i: int) -> None:
            if reference is not None:
                step_s, _ref_s, ratio = step_over_reference(slowed, reference, STEPS_PER_ROUND)
                out.append(step_s)
                ratios.append(ratio)
                return
            times, cpu_times = [], []
            for _ in range(STEPS_PER_ROUND):
                t0, c0 = time.perf_counter(), time.thread_time()
                step()
                took = time.perf_counter() - t0
                if slowdown and cpu_clock:
                    _spin_cpu((time.thread_time() - c0) * slowdown)  # more work, as a slower step's code does
                elif slowdown:
                    _spin(took * slowdown)
                times.append(time.perf_counter() - t0)
                cpu_times.append(time.thread_time() - c0)
            out.append(statistics.median(times))
            cpu.append(statistics.median(cpu_times))

        outcome = run_rounds(one, rounds, policy, None if decided is None else (lambda: decided(out, ratios)))
        wall = time.perf_counter() - start
        reading = window.reading()
    finally:
        _stop(procs)
    return out, reading, wall, outcome, ratios if reference is not None else cpu


def run_doc(rounds: list[float], reading: dict | None, label: str, ratios: list[float] | None = None,
            cpu: list[float] | None = None) -> dict[str, Any]:
    """A run file as ``--benchmark-json`` writes it for one genai benchmark (the contract the gate reads); with
    ``ratios``, its ``step_time_per_reference`` rounds and the reference kernel's label too."""
    from pytest_genai.runtime.reference import REFERENCE_ID

    metrics: dict[str, float] = {"step_time_s": statistics.median(rounds)}
    units, per_round = {"step_time_s": "s"}, {"step_time_s": rounds}
    labels = {}
    if ratios:
        metrics["step_time_per_reference"] = statistics.median(ratios)
        units["step_time_per_reference"] = "1"
        per_round["step_time_per_reference"] = ratios
        labels["reference_kernel"] = REFERENCE_ID
    if cpu:
        metrics["step_cpu_s"] = statistics.median(cpu)
        units["step_cpu_s"] = "s"
        per_round["step_cpu_s"] = cpu
    genai = {"schema": "pytest-genai/1", "experiment": "dabench", "device": {"kind": "cpu", "generation": "cpu"},
             "model": "decoder-stack", "config": {"id": "L2-h64-a1-s128-b1-fp32-forward"},
             "metrics": metrics, "metric_sources": {m: "measured" for m in metrics},
             "metric_units": units, "metric_rounds": per_round, "claims": [],
             "labels": labels, "attachments": {"cpu_contention": reading} if reading else {}}
    bench = {"name": "test_level1_cpu[L2-h64-a1-s128-b1-fp32-forward]", "fullname": label, "param": None,
             "extra_info": {"genai": genai}, "options": {}}
    return {"machine_info": {}, "commit_info": {}, "benchmarks": [bench], "datetime": "2026-12-03T00:00:00"}


def table(cases: list[dict]) -> tuple[list[str], list[str]]:
    """The markdown table of ``cases`` (per slowdown and condition, the rows read each way) and the targets missed."""
    missed: list[str] = []
    lines = ["| slowdown | machine | pairs | regressed | inconclusive | unchanged | improved | s per decision | "
             "rounds (base / current) | CPU stall share |",
             "| -------: | ------- | ----: | --------: | -----------: | --------: | -------: | -------------: | "
             "----------------------: | --------------: |"]
    for slowdown in dict.fromkeys(c["slowdown"] for c in cases):
        for cond in ("idle", "loaded"):
            group = [c for c in cases if c["slowdown"] == slowdown and (c["loaded"] == "idle") == (cond == "idle")]
            if not group:
                continue
            n = {v: sum(1 for c in group if c["verdict"] == v) for v in ("regressed", "inconclusive", "unchanged",
                                                                          "improved")}
            secs = statistics.fmean(c["seconds"] for c in group)
            stalls = [x for c in group for x in (c["stall_base"], c["stall_cur"]) if x is not None]
            psi = f"{min(stalls):.2f}-{max(stalls):.2f}" if stalls else "—"
            taken = [c["rounds_current"] for c in group if "rounds_current" in c]
            based = [c["rounds_baseline"] for c in group if "rounds_baseline" in c]
            # cases saved before the rounds were recorded: "—" (they took the fixed --rounds)
            rounds = f"{min(based)}-{max(based)} / {min(taken)}-{max(taken)}" if taken and based else "—"
            lines.append(f"| {slowdown:.0%} | {cond} | {len(group)} | {n['regressed']} | {n['inconclusive']} | "
                         f"{n['unchanged']} | {n['improved']} | {secs:.2f} | {rounds} | {psi} |")
            if slowdown == 0 and n["regressed"]:
                missed.append(f"{n['regressed']} false alarm(s), {cond}")
            if (slowdown >= 0.30 or (slowdown >= 0.15 and cond == "idle")) and n["regressed"] < len(group):
                missed.append(f"{slowdown:.0%} slowdown not detected {len(group) - n['regressed']} time(s), {cond}")
            if slowdown >= THRESHOLD and n["unchanged"]:
                missed.append(f"{slowdown:.0%} slowdown read unchanged {n['unchanged']} time(s), {cond}")
    return lines, missed


INSTRUCTION_STEPS = 10
"""Steps per round of ``--statistic instructions``: a round's count is their sum over valgrind's run of them."""


def instructions_doc(per_step: list[float], reading: dict | None, label: str) -> dict[str, Any]:
    """A run file of one Level 1 CPU benchmark holding ``step_instructions``'s rounds (and the CPU pressure read
    while they were counted), as ``--benchmark-json`` writes it."""
    doc = run_doc([1.0], reading, label)
    genai = doc["benchmarks"][0]["extra_info"]["genai"]
    name = "step_instructions"
    genai.update(metrics={name: statistics.median(per_step)}, metric_sources={name: "measured"},
                 metric_units={name: "instructions"}, metric_rounds={name: list(per_step)})
    return doc


def gate_files(base: dict, cur: dict) -> tuple[int, dict[str, Any]]:
    """``pytest-genai gate`` of two run files (the command itself, at ``step_instructions=10%``): its exit status
    and its JSON report."""
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, doc in (("base.json", base), ("cur.json", cur)):
            paths.append(str(Path(tmp) / name))
            with open(paths[-1], "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
        done = subprocess.run([sys.executable, "-m", "pytest_genai.cli", "gate", *paths, "--max-regression",
                               f"step_instructions={THRESHOLD * 100:g}%", "--format", "json", "--all"],
                              env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {"stderr": done.stderr}


def run_instructions(args: argparse.Namespace) -> int:
    """``--statistic instructions``: the step's instructions counted by valgrind (callgrind), gated as
    ``step_instructions``. Idle first, the busy loop's instructions per turn and the baseline's per step (the
    slowdowns' sizes: a slowdown of 30% is that many more instructions, a counted loop after each step); then, with a
    CPU burner per core, the baseline, the same code and each slowdown counted at once, and each gated against that
    baseline by the ``pytest-genai gate`` command. Targets: same code exits 0 read unchanged, a slowdown at or above
    the threshold exits 1."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from pytest_genai.runtime.instructions import count_step_instructions
    from pytest_genai.runtime.pressure import Window

    factory = f"{Path(__file__).resolve()}:level1_step"

    def count(extra: int = 0) -> Any:
        return count_step_instructions(factory, {"extra": extra} if extra else {}, steps=INSTRUCTION_STEPS,
                                       rounds=args.rounds, warmup=5, timeout_s=args.timeout)

    loop = [count_step_instructions("pytest_genai.runtime.instructions:python_loop", {"n": n}, steps=5, rounds=3,
                                    warmup=1) for n in (10_000, 20_000)]
    per_turn = (loop[1].mean - loop[0].mean) / 10_000
    from concurrent.futures import ThreadPoolExecutor as Pool

    with Pool(max_workers=max(1, args.idle_launches)) as pool:  # at once: two cores, and no burner
        idle = list(pool.map(lambda _i: count(), range(args.idle_launches)))
    base_mean = statistics.fmean(c.mean for c in idle)
    slowdowns = [float(x) for x in args.slowdowns.split(",")]
    extras = {s: round(s * base_mean / per_turn) for s in slowdowns}
    print(f"idle: {base_mean:.0f} instructions a step; busy loop {per_turn:.1f} a turn; extra turns {extras}",
          file=sys.stderr)

    load_before = os.getloadavg()
    procs = _burners()
    try:
        time.sleep(0.3)  # let the burners reach the cores
        window = Window.open()
        with ThreadPoolExecutor(max_workers=1 + len(slowdowns)) as pool:
            base_f = pool.submit(count)
            cur_f = {s: pool.submit(count, extras[s]) for s in slowdowns}
            base, cur = base_f.result(), {s: f.result() for s, f in cur_f.items()}
        reading = window.reading()
        load_after = os.getloadavg()
    finally:
        _stop(procs)
    stall = (reading or {}).get("stall_share_measured")
    base_doc = instructions_doc(list(base.per_step), reading, "base")
    cases, missed = [], []
    for s in slowdowns:
        code, report = gate_files(base_doc, instructions_doc(list(cur[s].per_step), reading, "cur"))
        row = next((r for r in report.get("rows", []) if r.get("metric") == "step_instructions"), {})
        cases.append({"slowdown": s, "extra_turns": extras[s], "loaded": "both", "exit_code": code,
                      "gate_verdict": report.get("verdict"), "verdict": row.get("status"), "row": row,
                      "baseline_per_step": list(base.per_step), "current_per_step": list(cur[s].per_step),
                      "ratio": cur[s].mean / base.mean, "stall_share": stall,
                      "seconds_baseline": base.wall_s, "seconds_current": cur[s].wall_s})
        want = (0, "unchanged") if s == 0 else (1, "regressed") if s >= THRESHOLD else None
        if want and (code, row.get("status")) != want:
            missed.append(f"{s:.0%}: exit {code}, {row.get('status')} (wanted exit {want[0]}, {want[1]})")
        print(f"{s:.0%} slower: {cur[s].mean / base.mean:.4f}x, gate exit {code} ({row.get('status')}); "
              f"{base.wall_s:.0f} s / {cur[s].wall_s:.0f} s a side, CPU stall {stall}", file=sys.stderr)
    same = [c.mean for c in idle] + [base.mean] + [cur[s].mean for s in slowdowns if s == 0]
    spread = statistics.stdev(math.log(x) for x in same) if len(same) > 1 else None
    doc = {"statistic": "instructions", "step": "L2-h64-a1-s128-b1-fp32-forward, one thread", "tool": base.tool,
           "threshold": THRESHOLD, "steps_per_round": INSTRUCTION_STEPS, "rounds": args.rounds,
           "busy_loop_per_turn": per_turn, "idle_launches": [c.to_json() for c in idle],
           "loaded": {"burners": len(procs), "load_avg_before": load_before, "load_avg_after": load_after,
                      "cpu_contention": reading, "baseline": base.to_json(),
                      "current": {f"{s:g}": cur[s].to_json() for s in slowdowns}},
           "same_code_launch_means": same, "run_noise_log_sd": spread, "cases": cases}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
    print(f"same-code launches: {len(same)}, SD of the log mean {spread}", file=sys.stderr)
    for line in missed:
        print(f"target missed: {line}", file=sys.stderr)
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10, help="pairs per slowdown (half of them loaded)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds per run")
    parser.add_argument("--slowdowns", default="0,0.05,0.15,0.30", help="injected slowdowns, comma separated")
    parser.add_argument("--rounds-mode", default="fixed", choices=("fixed", "auto"),
                        help="auto: the current side adds rounds while its gate row against the baseline reads "
                             "inconclusive (as --genai-rounds auto with --genai-baseline)")
    parser.add_argument("--load", default="alternate", choices=("alternate", "both"),
                        help="both: every loaded pair has a CPU burner per core beside both sides")
    parser.add_argument("--statistic", default="median", choices=("median", "reference", "cputime", "instructions"),
                        help="reference: also time the reference kernel beside each step and gate "
                             "step_time_per_reference with step_time_s (as the Level 1 CPU benchmark records them); "
                             "cputime: gate step_cpu_s, each step's CPU seconds on its thread's clock, beside "
                             "step_time_s, the slowdown added as CPU work (whether a thread's CPU clock is robust "
                             "to a load beside it); instructions: gate step_instructions, the step's instructions "
                             "counted by valgrind, a burner per core beside every side (--slowdowns 0,0.3 "
                             "recommended; --pairs and --load are not used)")
    parser.add_argument("--idle-launches", type=int, default=2,
                        help="instructions: idle launches of the baseline before the loaded ones (their count sizes "
                             "the slowdowns; with the loaded same-code launches, the spread between launches)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="instructions: seconds per valgrind launch")
    parser.add_argument("--time-budget", type=float, default=10.0, help="seconds of extra rounds per side (auto)")
    parser.add_argument("--json", default=None, help="also write every case here")
    parser.add_argument("--table", default=None, metavar="JSON",
                        help="measure nothing: print the table (and the targets missed) of cases saved with --json")
    args = parser.parse_args(argv)
    if args.table:
        with open(args.table, encoding="utf-8") as fh:
            lines, missed = table(json.load(fh))
        print("\n".join(lines))
        for line in missed:
            print(f"target missed: {line}", file=sys.stderr)
        return 1 if missed else 0
    if args.statistic == "instructions":
        return run_instructions(args)

    import torch

    from pytest_genai.claims import load_metrics
    from pytest_genai.dabench import model
    from pytest_genai.dabench.config import DecoderConfig
    from pytest_genai.report.compare import fails
    from pytest_genai.report.gate import gate_runs
    from pytest_genai.results.registry import metric_info_from
    from pytest_genai.results.runs import run_from_json
    from pytest_genai.report.thresholds import parse_thresholds, precise_for_gate

    torch.set_num_threads(1)  # one core for the step, as the burner gets one per core
    cfg = DecoderConfig(layers=2, hidden=64, heads=1, seq_len=128)
    dev = torch.device("cpu")
    stack = model.build_stack(cfg, dev)
    step = model.make_step(cfg, stack, model.make_input(cfg, dev))
    for _ in range(20):
        step()
    from pytest_genai.runtime.rounds import RoundsPolicy

    policy = RoundsPolicy(args.rounds_mode, budget_s=args.time_budget)
    info = metric_info_from(load_metrics())
    reference = None
    names = ["step_time_s"]
    if args.statistic == "reference":
        from pytest_genai.runtime.reference import reference_kernel

        reference = reference_kernel()
        for _ in range(20):
            reference()
        names.insert(0, "step_time_per_reference")  # the row a case reads as, where no row fails the gate
    if args.statistic == "cputime":
        names.insert(0, "step_cpu_s")
    thresholds = parse_thresholds(",".join(f"{n}={THRESHOLD * 100:g}%" for n in names))
    cases = []
    for slowdown in [float(x) for x in args.slowdowns.split(",")]:
        for i in range(args.pairs):
            loaded = i % 2 == 1
            load_side = ("current" if (i // 2) % 2 == 0 else "baseline") if loaded else None
            if loaded and args.load == "both":
                load_side = "both"
            # the baseline run takes rounds until a later gate at the threshold could decide (--genai-rounds auto
            # without a baseline of its own)
            cpu_clock = args.statistic == "cputime"
            base = measure_side(step, args.rounds, 0.0, load_side in ("baseline", "both"), policy,
                                lambda rounds, ratios: precise_for_gate(ratios or rounds, THRESHOLD), reference,
                                cpu_clock)

            def row(cur_rounds: list[float], cur_ratios: list[float], base_reading: dict | None,
                    cur_reading: dict | None) -> tuple[Any, dict[str, Any]]:
                """The case's row (the first of ``names``; a failing row of the benchmark wins) and every row's
                verdict."""
                extra = "cpu" if cpu_clock else "ratios"
                result = gate_runs(run_from_json(run_doc(base[0], base_reading, "base", **{extra: base[4]}), "base"),
                                   run_from_json(run_doc(cur_rounds, cur_reading, "cur", **{extra: cur_ratios}),
                                                 "cur"), info, thresholds)
                rows = {m.metric: m for m in result.comparison.pairs[0].metrics if m.metric in names}
                failing = [rows[n] for n in names if fails(rows[n])]
                return (failing or [rows[names[0]]])[0], {n: rows[n].verdict for n in names}

            def decided(cur_rounds: list[float], cur_ratios: list[float]) -> bool:
                # contention left out: more rounds cannot undo it
                return row(cur_rounds, cur_ratios, None, None)[0].status != "inconclusive"

            cur = measure_side(step, args.rounds, slowdown, load_side in ("current", "both"), policy, decided,
                               reference, cpu_clock)
            mc, verdicts = row(cur[0], cur[4], base[1], cur[1])
            cases.append({"slowdown": slowdown, "loaded": load_side or "idle", "verdict": mc.verdict,
                          "statistic": args.statistic, "row": mc.metric, "verdicts": verdicts,
                          "status": mc.status, "ratio": mc.ratio, "interval": mc.interval, "note": mc.note,
                          "stall_base": (base[1] or {}).get("stall_share_measured"),
                          "stall_cur": (cur[1] or {}).get("stall_share_measured"), "seconds": base[2] + cur[2],
                          "rounds_current": cur[3].rounds, "stopped": cur[3].stopped,
                          "rounds_baseline": base[3].rounds})
            print(json.dumps(cases[-1]), file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(cases, fh, indent=1)
    lines, missed = table(cases)
    print("\n".join(lines))
    for line in missed:
        print(f"target missed: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
