"""A bare ``torchrun`` DDP script: the yardstick for the suite's launcher and worker (the harness must not slow the steps it times).

``torchrun --standalone --nproc-per-node=N -m pytest_genai.train.bare_ddp CONFIG_JSON`` does only what a user's
own script would: set the threads, join the gloo process group, build the same model as the worker (same
architecture, attention, seed and synthetic batches), wrap it in DDP with the worker's optimizer, and time each
step with ``time.perf_counter()``. Rank 0 prints one JSON line: every rank's step seconds and the per-step loss
averaged over ranks. It uses none of the suite's launcher, rank, process-group or timing machinery.

The rest is pure or runs it: :func:`command`, :func:`parse_output`, :func:`run_bare` (a subprocess with a
timeout; on a hang every process of the job is killed) and :func:`launcher_vs_bare` (the comparison the benchmark
records: the suite's steady-state step throughput over the bare script's, the two launched alternately).
CPU only (gloo); full fine-tuning in fp32, as the tiny rows on the CPU.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_genai.stats import Interval, bootstrap_ratio_interval, hierarchical_ratio_interval
from pytest_genai.runtime.timing import after_warmup, slowest_rank_steps
from pytest_genai.train.config import ThroughputConfig

MODULE = "pytest_genai.train.bare_ddp"
#: The key of rank 0's JSON line on stdout.
KEY = "bare_ddp"


def check_config(cfg: ThroughputConfig) -> None:
    """The bare script trains what it can without the suite's strategy layer: DDP, fp32, full fine-tuning."""
    if cfg.strategy != "ddp" or cfg.precision != "fp32" or cfg.lora is not None:
        raise ValueError(f"the bare DDP script runs strategy='ddp', precision='fp32', lora=None; got {cfg.id}")


def command(cfg: ThroughputConfig, nproc: int) -> list[str]:
    """The ``torchrun`` command line a user would type for ``nproc`` ranks on this node (torchrun's defaults)."""
    check_config(cfg)
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", MODULE, json.dumps(cfg.to_json(), sort_keys=True)]


def parse_output(stdout: str) -> dict[str, Any]:
    """Rank 0's result from the job's stdout: the last line that is a JSON object with the ``bare_ddp`` key."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and KEY in data:
                out = data[KEY]
                ranks = out.get("step_s")
                if not ranks or not all(isinstance(r, list) and r for r in ranks):
                    raise ValueError(f"bare DDP result has no per-rank step times: {line[:200]}")
                return out
    raise ValueError(f"no {KEY!r} JSON line in the bare DDP job's output (last 500 characters: {stdout[-500:]!r})")


@dataclasses.dataclass(frozen=True)
class BareRun:
    """The bare script's steps (slowest rank per step, warm-up included), per-step losses and its wall time."""

    step_s: tuple[float, ...]
    losses: tuple[float, ...]
    wall_s: float
    threads: int


def run_bare(cfg: ThroughputConfig, nproc: int, *, timeout_s: float = 300.0,
             env: Mapping[str, str] | None = None) -> BareRun:
    """Run the bare script under ``torchrun`` on ``nproc`` local ranks; a failure or a hang raises with its output.

    The job carries a launch token so that, on a timeout, torchrun and every rank are found and killed (as the
    suite's launcher does); nothing else of the launcher is used.
    """
    from pytest_genai.runtime.processes import (TOKEN_ENV, alive, die_with_parent, signal_all, SigtermAsInterrupt,
                                               start_watchdog, stop_watchdog, stop_watchdog_if_done, job_processes,
                                               kill_job)

    cmd = command(cfg, nproc)
    token = uuid.uuid4().hex
    child_env = {**os.environ, **(env or {}), TOKEN_ENV: token}
    package_root = str(Path(__file__).resolve().parents[2])
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, child_env.get("PYTHONPATH")) if p)
    # torchrun without --log-dir makes a torchelastic_* folder in the temporary folder per job and leaves it there:
    # the job gets a temporary folder of its own (TMPDIR), removed after it; the command line stays the user's.
    with tempfile.TemporaryDirectory(prefix="genai-bare-ddp-", ignore_cleanup_errors=True) as job_tmp:
        child_env["TMPDIR"] = job_tmp
        start = time.monotonic()
        # the launcher's guarantees: SIGTERM to pytest kills the job, a dead pytest takes torchrun with it (parent
        # death signal) and the ranks (the watchdog, by token); an interrupt stays an interrupt
        with SigtermAsInterrupt():
            # bytes a rank prints that are not UTF-8 (a library's message in another locale) are replaced: a strict
            # decode raised UnicodeDecodeError in place of the job's output
            proc = subprocess.Popen(cmd, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    encoding="utf-8", errors="replace", start_new_session=True,
                                    preexec_fn=die_with_parent())
            watchdog = None
            try:
                watchdog = start_watchdog(proc.pid, token, {k: v for k, v in child_env.items() if k != TOKEN_ENV})
                stdout, stderr = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_job(proc, token)
                try:
                    stdout, stderr = proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:  # a pipe held open by a process the kill missed
                    stdout, stderr = "", "(no output: the job's pipes stayed open after it was killed)"
                raise RuntimeError(f"the bare DDP job timed out after {timeout_s:g} s and was killed: "
                                   f"{' '.join(cmd[:6])}\n{stderr[-2000:]}") from None
            except BaseException:
                kill_job(proc, token)
                raise
            finally:
                stop_watchdog_if_done(watchdog, proc, token)
        wall = time.monotonic() - start
        signal_all([p for p in job_processes(proc.pid, token) if alive(p)], signal.SIGKILL)  # what it left
        stop_watchdog(watchdog)
    if proc.returncode != 0:
        raise RuntimeError(f"the bare DDP job exited {proc.returncode}: {' '.join(cmd[:6])}\n"
                           f"stdout: {stdout[-1000:]}\nstderr: {stderr[-2000:]}")
    out = parse_output(stdout)
    return BareRun(tuple(slowest_rank_steps(out["step_s"])), tuple(float(x) for x in out["losses"]), wall,
                   int(out["threads"]))


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The suite's steady-state step throughput over the bare script's (same config, same global batch), from jobs
    run alternately: bare, suite, bare, ..., bare."""

    ratio: float  # mean of the bare jobs' median steps / mean of the suite jobs' median steps, after warm-up
    interval: Interval
    suite_step_s: tuple[float, ...]  # each suite job's median step, in launch order
    bare_step_s: tuple[float, ...]  # each bare job's median step, in launch order


def launcher_vs_bare(suite_jobs: Sequence[Sequence[float]], bare_jobs: Sequence[Sequence[float]],
                     warmup: int) -> Comparison:
    """Compare slowest-rank step times after each job's ``warmup`` steps (pure), the jobs launched alternately:
    bare, suite, bare, suite, ..., bare (one more bare job than suite jobs).

    Throughput is the same global batch per step on both sides, so the throughput ratio is the inverse ratio of
    the step times: the bare jobs' mean median over the suite jobs' mean median. A load that drifts steadily during
    the jobs moves both means alike (the bare jobs bracket the suite's). A load that changes between jobs is not
    noise within a job: the interval is a two-stage bootstrap (jobs, then steps), so a spread of one side's job
    medians widens it instead of deciding the verdict.
    """
    if len(suite_jobs) < 1 or len(bare_jobs) != len(suite_jobs) + 1:
        raise ValueError(f"launcher_vs_bare needs bare, suite, ..., bare: {len(bare_jobs)} bare and "
                         f"{len(suite_jobs)} suite jobs (one more bare job than suite jobs)")
    suite = [after_warmup(x, warmup) for x in suite_jobs]
    bare = [after_warmup(x, warmup) for x in bare_jobs]
    suite_medians = tuple(statistics.median(x) for x in suite)
    bare_medians = tuple(statistics.median(x) for x in bare)
    if min(suite_medians + bare_medians) <= 0:
        raise ValueError("step times must be positive")
    ratio = statistics.fmean(bare_medians) / statistics.fmean(suite_medians)
    if len(suite) == 1:  # one suite job: its spread between jobs is unknown; span the intervals against each bare job
        pair = [bootstrap_ratio_interval(b, suite[0]) for b in bare]
        interval = Interval(min(i.lo for i in pair), max(i.hi for i in pair), pair[0].level, min(i.n for i in pair),
                            "ratio of medians, percentile bootstrap against each bare job (union)")
    else:
        interval = hierarchical_ratio_interval(bare, suite)
    return Comparison(ratio, interval, suite_medians, bare_medians)


# --- the script itself (what every rank runs) ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - runs under torchrun (benchmarks/test_finetune)
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(f"usage: torchrun --standalone --nproc-per-node=N -m {MODULE} CONFIG_JSON", file=sys.stderr)
        return 2
    from pytest_genai.train.config import from_json

    cfg = from_json(json.loads(argv[0]))
    check_config(cfg)

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from pytest_genai.runtime.threads import rank_threads
    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.train.job import synthetic_batch

    rank, local_world = int(os.environ["RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    threads = rank_threads(local_world)  # the suite's worker's rule: the allocation's cores shared by the ranks
    torch.set_num_threads(threads)
    dist.init_process_group("gloo")
    arch = get_arch(cfg.model, cfg.scale)
    model = build_model(arch, "sdpa" if cfg.attention == "fused" else "eager", seed=cfg.seed)
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    batches = [synthetic_batch(cfg.seed, i, rank, cfg.micro_batch, cfg.seq_len, arch.vocab) for i in range(cfg.steps)]
    step_s, losses = [], []
    for ids in batches:
        t0 = time.perf_counter()
        loss = ddp(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step_s.append(time.perf_counter() - t0)
        losses.append(loss.detach())
    mean_loss = torch.stack(losses)
    dist.all_reduce(mean_loss)  # gloo has no AVG: sum, then divide
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, step_s)
    if rank == 0:
        result = {"step_s": gathered, "losses": (mean_loss / dist.get_world_size()).tolist(), "threads": threads}
        print(json.dumps({KEY: result}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # torch 2.13 + gloo sometimes aborts a normal interpreter exit (pytest_genai.runtime.rank.finish)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
