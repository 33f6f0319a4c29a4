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

from pytest_genai.runtime.rank import RESULT_ON_ANOTHER_NODE

TOKEN_ENV = "PYTEST_GENAI_LAUNCH_TOKEN"
TAIL_LINES = 30


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


def _proc_env_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == pid:
                    kids.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return kids


def job_processes(root_pid: int, token: str) -> list[int]:
    """Every process of one launch: descendants of torchrun, plus any process carrying the launch token.

    Descendants only while ``root_pid`` is still this launch's torchrun (it carries the token): once torchrun is
    reaped its pid can name an unrelated process, whose children must not be killed with the job."""
    found: list[int] = []
    stack = [root_pid] if is_launch_process(root_pid, token) else []
    while stack:
        pid = stack.pop()
        for kid in _children(pid):
            if kid not in found:
                found.append(kid)
                stack.append(kid)
    found += [pid for pid in token_processes(token) if pid != root_pid and pid not in found]
    return found


def is_launch_process(pid: int, token: str) -> bool:
    """Whether ``pid`` still carries this launch's token (not a recycled pid)."""
    return os.path.isdir("/proc") and _proc_env_has(pid, f"{TOKEN_ENV}={token}".encode())


def token_processes(token: str) -> list[int]:
    """Every process (but this one) whose environment carries the launch ``token``."""
    if not os.path.isdir("/proc"):
        return []
    needle = f"{TOKEN_ENV}={token}".encode()
    me = os.getpid()
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int(entry) != me and _proc_env_has(int(entry), needle)]


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def kill_job(proc: subprocess.Popen, token: str, grace_s: float = 3.0) -> None:
    """SIGTERM torchrun and every worker, then SIGKILL whatever is left after ``grace_s``."""
    pids = job_processes(proc.pid, token)
    _signal_all(([proc.pid] if proc.poll() is None else []) + pids, signal.SIGTERM)  # a reaped pid is not ours
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not any(_alive(p) for p in pids):
            break
        time.sleep(0.05)
    leftovers = [p for p in [*pids, *job_processes(proc.pid, token)] if _alive(p)]
    if proc.poll() is None:
        leftovers.append(proc.pid)
    _signal_all(leftovers, signal.SIGKILL)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass


def _die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: in the child, SIGKILL it when the thread that started it dies (Linux prctl
    PR_SET_PDEATHSIG), and exit at once if the parent died before that took effect. libc's ``prctl`` is looked up
    here, in the parent: the child between fork and exec must not import or dlopen (another pytest thread may hold
    the import lock or the loader's)."""
    prctl = None
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None
    parent = os.getpid()

    def child() -> None:  # pragma: no cover - runs in the child between fork and exec
        if prctl is not None:
            prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:
                os._exit(1)

    return child


class _SigtermAsInterrupt:
    """While a job runs in the main thread, SIGTERM raises KeyboardInterrupt (so the job is killed, then pytest
    stops as after Ctrl-C) instead of ending the process with the job still running."""

    def __enter__(self) -> "_SigtermAsInterrupt":
        import threading

        self.previous = None
        if threading.current_thread() is threading.main_thread():
            def handler(signum: int, frame: object) -> None:
                raise KeyboardInterrupt(f"signal {signum} (SIGTERM) while a distributed job ran; it was killed")

            self.previous = signal.signal(signal.SIGTERM, handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _start_watchdog(root: int, token: str, env: Mapping[str, str], remove: str | None = None
                    ) -> subprocess.Popen | None:
    try:
        return subprocess.Popen([sys.executable, "-m", "pytest_genai.runtime.watchdog", str(os.getpid()), str(root),
                                 token, *([remove] if remove else [])], env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:  # pragma: no cover - the job still runs; only the SIGKILL safety net is missing
        return None


def _stop_watchdog(watchdog: subprocess.Popen | None) -> None:
    if watchdog is not None and watchdog.poll() is None:
        watchdog.kill()
        watchdog.wait()


def _stop_watchdog_if_done(watchdog: subprocess.Popen | None, proc: subprocess.Popen, token: str) -> None:
    """Stop the watchdog once the job is gone; while any of it lives (a second signal cut ``kill_job`` short) the
    watchdog stays, and kills it when pytest exits."""
    if proc.poll() is not None and not any(_alive(p) for p in job_processes(proc.pid, token)):
        _stop_watchdog(watchdog)


TAIL_BYTES = 64 * 1024


def _tail(path: Path, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``lines`` lines of a log, read from its last ``max_bytes`` only (a rank's log can be gigabytes, e.g.
    with NCCL_DEBUG=INFO: reading it whole to show 30 lines could take pytest's memory with it)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - max_bytes))
            data = fh.read(max_bytes)
    except OSError as exc:
        return f"(unreadable: {exc})"
    if size > max_bytes:  # the first line read is a partial one
        data = data.split(b"\n", 1)[1] if b"\n" in data else data
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-lines:])


def rank_logs(log_dir: Path) -> dict[str, str]:
    """Tail of every log under ``log_dir``: torchrun's own and each rank's stdout/stderr (``<rank>/stderr.log``)."""
    logs: dict[str, str] = {}
    for path in sorted(log_dir.rglob("*.log")):
        rel = path.relative_to(log_dir)
        parts = rel.parts
        # torchrun layout: <run_id>/attempt_<n>/<local_rank>/{stdout,stderr}.log
        name = f"rank {parts[-2]} {path.stem}" if len(parts) >= 2 and parts[-2].isdigit() else str(rel)
        logs[name] = _tail(path)
    return logs


@dataclass(frozen=True)
class LaunchResult:
    result: dict | None  # None on the other nodes of a multi-node job: node 0 holds rank 0
    wall_s: float
    log_dir: Path


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
    with open(launcher_log, "wb") as out, _SigtermAsInterrupt():
        proc = subprocess.Popen(cmd, env=child_env, stdout=out, stderr=subprocess.STDOUT, cwd=work_dir,
                                start_new_session=True, preexec_fn=_die_with_parent())
        watchdog = None
        try:  # an interrupt from here on (the watchdog's start included) kills the job
            watchdog_env = {k: v for k, v in child_env.items() if k != TOKEN_ENV}  # not itself a job process
            watchdog = _start_watchdog(proc.pid, token, watchdog_env)
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
            _stop_watchdog_if_done(watchdog, proc, token)
    wall = time.monotonic() - start
    leftovers = [p for p in job_processes(proc.pid, token) if _alive(p)]
    if leftovers:
        _signal_all(leftovers, signal.SIGKILL)
    _stop_watchdog(watchdog)  # the job ended and what it left is killed: the watchdog has nothing left to guard
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
    with _SigtermAsInterrupt():
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
    strays = [p for p in token_processes(agent.token) if p != agent.proc.pid and _alive(p)]
    _signal_all(strays, signal.SIGKILL)  # a rank's detached child (the job's ranks have all exited)
    if not answer.get("ok"):
        raise LaunchError(f"distributed job failed ({what}): {answer.get('error')}", returncode=1, timed_out=False,
                          logs=rank_logs(log_dir))
    return LaunchResult(result=_read_result(result_path, log_dir, 0), wall_s=wall, log_dir=log_dir)

