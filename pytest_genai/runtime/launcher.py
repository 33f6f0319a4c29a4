"""Launch distributed workers through ``torchrun`` (``python -m torch.distributed.run``) as a subprocess.

The test process stays out of the process group: it starts torchrun with a timeout and reads rank 0's result
file. On a crash, a non-zero exit or a timeout it kills torchrun *and every worker* (torchrun starts each
worker in its own session, so killing torchrun's process group is not enough: workers are found through a
launch token in their environment, which also finds workers re-parented after torchrun died) and raises
:class:`LaunchError` with the tail of every rank's log.

No process outlives the pytest that launched it: torchrun gets a parent-death signal (SIGKILL when the launching
thread dies), a SIGTERM to the launching process (a CI job's timeout) becomes a KeyboardInterrupt there, so the job
is killed before pytest stops, and a watchdog process (:mod:`pytest_genai.runtime.watchdog`) kills the job and every
worker if the launching process is killed outright (SIGKILL runs no cleanup).

Rendezvous: one node uses ``--standalone`` (a free port). Several nodes need ``nnodes`` and an endpoint
``host:port``; under Slurm the node rank and job id come from its environment (``SLURM_NODEID``,
``SLURM_JOB_ID``) when not given. Elsewhere (no node rank: c10d rendezvous) every node must name the same
rendezvous for the same job: the id is the session's launch number (``genai-1``, ``genai-2``, ...), the same on
every node when each runs the same pytest command (a random id per node, as before, never met).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_genai.runtime.processes import (TAIL_LINES, TOKEN_ENV, SigtermAsInterrupt, alive, die_with_parent,  # noqa: F401
                                            is_launch_process, job_processes, kill_job, rank_logs, signal_all,
                                            start_watchdog, stop_watchdog, stop_watchdog_if_done, tail,
                                            token_processes)
from pytest_genai.runtime.rank import RESULT_ON_ANOTHER_NODE


class LaunchError(RuntimeError):
    """The distributed job crashed, exited non-zero, hung past its timeout, or wrote no result."""

    def __init__(self, message: str, *, returncode: int | None, timed_out: bool, logs: Mapping[str, str]):
        self.returncode = returncode
        self.timed_out = timed_out
        self.logs = dict(logs)
        parts = [message]
        for name, tail in self.logs.items():
            parts.append(f"----- {name} (last {TAIL_LINES} lines) -----\n{tail.rstrip() or '(empty)'}")
        super().__init__("\n".join(parts))


@dataclass(frozen=True)
class LaunchSpec:
    """How many processes, on how many nodes, and for how long at most."""

    nproc: int = 2
    nnodes: int = 1
    rdzv_endpoint: str | None = None
    node_rank: int | None = None
    rdzv_id: str | None = None
    timeout_s: float = 300.0

    def __post_init__(self) -> None:
        for field in ("nproc", "nnodes"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"LaunchSpec.{field}={value!r} must be a positive int (--genai-{field})")
        if not (isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0):
            raise ValueError(f"LaunchSpec.timeout_s={self.timeout_s!r} must be positive (--genai-timeout)")
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise ValueError(
                f"LaunchSpec: nnodes={self.nnodes} needs rdzv_endpoint host:port reachable from every node "
                "(--genai-rdzv-endpoint, e.g. the first Slurm node and a free port)"
            )
        if self.rdzv_endpoint is not None and ":" not in self.rdzv_endpoint:
            raise ValueError(f"LaunchSpec.rdzv_endpoint={self.rdzv_endpoint!r} must be host:port")

    @property
    def world_size(self) -> int:
        return self.nproc * self.nnodes

    @property
    def id(self) -> str:
        return f"{self.nnodes}x{self.nproc}"

    @classmethod
    def from_env(cls, nproc: int, nnodes: int = 1, rdzv_endpoint: str | None = None, timeout_s: float = 300.0,
                 env: Mapping[str, str] | None = None) -> "LaunchSpec":
        """A spec that takes the node rank and job id from Slurm's environment when present."""
        env = os.environ if env is None else env
        node_rank = None
        rdzv_id = None
        # inside a job step (srun) only, as runtime.slurm.from_env: a batch script's own shell also has SLURM_NODEID
        # (0), and pytest started there, or by ssh on each node, would claim node 0 on every node
        if nnodes > 1 and "SLURM_JOB_ID" in env and "SLURM_STEP_ID" in env:
            rdzv_id = f"slurm-{env['SLURM_JOB_ID']}"
            if "SLURM_NODEID" in env:
                node_rank = int(env["SLURM_NODEID"])
        return cls(nproc=nproc, nnodes=nnodes, rdzv_endpoint=rdzv_endpoint, node_rank=node_rank,
                   rdzv_id=rdzv_id, timeout_s=timeout_s)


_RENDEZVOUS_SEQ = itertools.count(1)


def next_rendezvous_id() -> str:
    """The c10d rendezvous id of this session's next multi-node launch: its number, so every node running the same
    pytest command names the same rendezvous for the same job."""
    return f"genai-{next(_RENDEZVOUS_SEQ)}"


def torchrun_command(spec: LaunchSpec, log_dir: Path, worker: Sequence[str], run_id: str) -> list[str]:
    """The ``torchrun`` command line (``worker`` is ``['-m', 'module', ...]`` or ``['script.py', ...]``)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={spec.nproc}"]
    if spec.nnodes == 1 and spec.rdzv_endpoint is None:
        cmd.append("--standalone")
    elif spec.node_rank is not None:
        # A known node rank (e.g. Slurm's): static rendezvous, so node 0 hosts global rank 0, which writes the
        # result. (c10d assigns group ranks in arrival order and ignores --node-rank.)
        host, _, port = spec.rdzv_endpoint.rpartition(":")
        cmd += [f"--nnodes={spec.nnodes}", f"--node-rank={spec.node_rank}", f"--master-addr={host}",
                f"--master-port={port}"]
    else:
        cmd += [
            f"--nnodes={spec.nnodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={spec.rdzv_endpoint}",
            f"--rdzv-id={spec.rdzv_id or run_id}",
        ]
    cmd += ["--max-restarts=0", "--monitor-interval=0.5", f"--log-dir={log_dir}", "--redirects=3", "--role=genai"]
    return cmd + list(worker)


@dataclass(frozen=True)
class LaunchResult:
    result: dict | None  # None on the other nodes of a multi-node job: node 0 holds rank 0
    wall_s: float
    log_dir: Path


def release_cached_device_memory() -> None:
    """Gives back the memory this process's CUDA allocator caches but no tensor uses, before ranks start: the
    in-process benchmarks that ran earlier (Level 1, the A1 rows) keep gigabytes cached on GPU 0, where rank 0 of
    the job will run. torch is not imported for this: a process that has not used CUDA has nothing to give back."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    import gc

    gc.collect()
    torch.cuda.empty_cache()


def launch(
    worker: Sequence[str],
    spec: LaunchSpec,
    work_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    result_name: str = "result.json",
    warm: bool = False,
) -> LaunchResult:
    """Run ``worker`` on ``spec.world_size`` ranks and return rank 0's JSON result (None on nodes other than 0).

    The worker gets ``PYTEST_GENAI_RESULT`` (where rank 0 writes its JSON, atomically) in its environment.
    Raises :class:`LaunchError` with every rank's log tail when the job fails, hangs or writes no result.
    ``warm=True`` (the CPU callers) forks the ranks from the session's warm agent (:mod:`pytest_genai.runtime.warm`)
    when the job is one node without an explicit rendezvous endpoint and ``worker`` is ``['-m', module, ...]``.
    """
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    release_cached_device_memory()
    run_id = uuid.uuid4().hex[:12]
    rendezvous = next_rendezvous_id() if spec.nnodes > 1 and spec.node_rank is None else run_id
    # a folder of this launch's own: a job relaunched in the same work_dir (RunCache fresh=True) must not report
    # an earlier run's rank logs as its own (rank_logs names them by rank, so one would hide the other)
    log_dir = work_dir / "logs" / run_id
    log_dir.mkdir(parents=True)
    result_path = work_dir / result_name
    if result_path.exists():
        result_path.unlink()
    token = uuid.uuid4().hex
    child_env = dict(os.environ)
    child_env.update(env or {})
    package_root = str(Path(__file__).resolve().parents[2])
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, child_env.get("PYTHONPATH")) if p)
    child_env[TOKEN_ENV] = token
    child_env["PYTEST_GENAI_RESULT"] = str(result_path)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    cmd = torchrun_command(spec, log_dir, worker, rendezvous)
    if warm and _warm_eligible(spec, worker):
        return _launch_warm(cmd, worker, spec, child_env, log_dir, result_path)
    launcher_log = log_dir / "torchrun.log"
    start = time.monotonic()
    with open(launcher_log, "wb") as out, SigtermAsInterrupt():
        proc = subprocess.Popen(cmd, env=child_env, stdout=out, stderr=subprocess.STDOUT, cwd=work_dir,
                                start_new_session=True, preexec_fn=die_with_parent())
        watchdog = None
        try:  # an interrupt from here on (the watchdog's start included) kills the job
            watchdog_env = {k: v for k, v in child_env.items() if k != TOKEN_ENV}  # not itself a job process
            watchdog = start_watchdog(proc.pid, token, watchdog_env)
            returncode = proc.wait(timeout=spec.timeout_s)
        except subprocess.TimeoutExpired:
            kill_job(proc, token)
            raise LaunchError(
                f"distributed job timed out after {spec.timeout_s:g} s ({spec.world_size} ranks, "
                f"{' '.join(worker)}); every process was killed. Raise --genai-timeout if it is only slow.",
                returncode=None, timed_out=True, logs=rank_logs(log_dir),
            ) from None
        except BaseException:
            kill_job(proc, token)
            raise
        finally:
            stop_watchdog_if_done(watchdog, proc, token)
    wall = time.monotonic() - start
    leftovers = [p for p in job_processes(proc.pid, token) if alive(p)]
    if leftovers:
        signal_all(leftovers, signal.SIGKILL)
    stop_watchdog(watchdog)  # the job ended and what it left is killed: the watchdog has nothing left to guard
    if returncode != 0:
        raise LaunchError(
            f"distributed job failed with exit code {returncode} ({spec.world_size} ranks, {' '.join(worker)})",
            returncode=returncode, timed_out=False, logs=rank_logs(log_dir),
        )
    if spec.nnodes > 1 and spec.node_rank not in (None, 0):
        return LaunchResult(result=None, wall_s=wall, log_dir=log_dir)  # rank 0 (node 0) writes the result
    result = _read_result(result_path, log_dir, returncode)
    if spec.nnodes > 1 and isinstance(result, dict) and RESULT_ON_ANOTHER_NODE in result:
        return LaunchResult(result=None, wall_s=wall, log_dir=log_dir)  # c10d put global rank 0 on another node
    return LaunchResult(result=result, wall_s=wall, log_dir=log_dir)


def _read_result(result_path: Path, log_dir: Path, returncode: int | None) -> dict:
    try:
        return json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LaunchError(
            f"distributed job exited 0 but rank 0 wrote no readable result at {result_path}: {exc}",
            returncode=returncode, timed_out=False, logs=rank_logs(log_dir),
        ) from None


def _warm_eligible(spec: LaunchSpec, worker: Sequence[str]) -> bool:
    from pytest_genai.runtime import warm

    return (warm.enabled() and spec.nnodes == 1 and spec.rdzv_endpoint is None and len(worker) >= 2
            and worker[0] == "-m")


def _launch_warm(cmd: Sequence[str], worker: Sequence[str], spec: LaunchSpec, child_env: dict[str, str],
                 log_dir: Path, result_path: Path) -> LaunchResult:
    """The job through the session's warm agent: the same torchrun flags, ranks forked from the agent. A failure
    raises :class:`LaunchError` with every rank's log tail; a timeout or an interrupt kills the agent and its ranks."""
    from pytest_genai.runtime import warm

    torchrun_args = list(cmd[3:len(cmd) - len(worker)])  # past `python -m torch.distributed.run`, before the worker
    module, argv = worker[1], list(worker[2:])
    what = f"{spec.world_size} ranks, {' '.join(worker)}, warm launcher"
    start = time.monotonic()
    with SigtermAsInterrupt():
        try:
            agent = warm.agent({**child_env, TOKEN_ENV: uuid.uuid4().hex}, log_dir.parent.parent / "warm-agent.log")
            job_env = {**child_env, TOKEN_ENV: agent.token}
            answer = agent.run(torchrun_args, module, argv, warm.env_changes(agent.env, job_env), spec.timeout_s)
        except TimeoutError:
            warm.discard()
            raise LaunchError(
                f"distributed job timed out after {spec.timeout_s:g} s ({what}); every process was killed. Raise "
                "--genai-timeout if it is only slow.", returncode=None, timed_out=True, logs=rank_logs(log_dir),
            ) from None
        except warm.AgentGone as exc:
            warm.discard()
            raise LaunchError(f"distributed job failed ({what}): {exc}", returncode=None, timed_out=False,
                              logs=rank_logs(log_dir)) from None
        except BaseException:
            warm.discard()
            raise
    wall = time.monotonic() - start
    strays = [p for p in token_processes(agent.token) if p != agent.proc.pid and alive(p)]
    signal_all(strays, signal.SIGKILL)  # a rank's detached child (the job's ranks have all exited)
    if not answer.get("ok"):
        raise LaunchError(f"distributed job failed ({what}): {answer.get('error')}", returncode=1, timed_out=False,
                          logs=rank_logs(log_dir))
    return LaunchResult(result=_read_result(result_path, log_dir, 0), wall_s=wall, log_dir=log_dir)

