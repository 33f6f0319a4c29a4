"""Process machinery shared by the launchers (``launcher``: one torchrun per job; ``warm``: ranks forked from a
kept agent; ``train.bare_ddp``: a bare torchrun script) and the watchdog: finding a job's processes by its launch
token, signalling and killing them, tying a child's life to its parent's, the watchdog beside each job, and reading
the tails of rank logs. One module that every side imports, so no launcher reaches into another's private names.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

#: The environment variable carrying a job's launch token: every process of the job inherits it, so the job's
#: processes can be found (and killed) even when they left torchrun's process tree.
TOKEN_ENV = "PYTEST_GENAI_LAUNCH_TOKEN"
TAIL_LINES = 30


def proc_env_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read()
    except OSError:
        return False


def children(pid: int) -> list[int]:
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
        for kid in children(pid):
            if kid not in found:
                found.append(kid)
                stack.append(kid)
    found += [pid for pid in token_processes(token) if pid != root_pid and pid not in found]
    return found


def is_launch_process(pid: int, token: str) -> bool:
    """Whether ``pid`` still carries this launch's token (not a recycled pid)."""
    return os.path.isdir("/proc") and proc_env_has(pid, f"{TOKEN_ENV}={token}".encode())


def token_processes(token: str) -> list[int]:
    """Every process (but this one) whose environment carries the launch ``token``."""
    if not os.path.isdir("/proc"):
        return []
    needle = f"{TOKEN_ENV}={token}".encode()
    me = os.getpid()
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int(entry) != me and proc_env_has(int(entry), needle)]


def signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def kill_job(proc: subprocess.Popen, token: str, grace_s: float = 3.0) -> None:
    """SIGTERM torchrun and every worker, then SIGKILL whatever is left after ``grace_s``."""
    pids = job_processes(proc.pid, token)
    signal_all(([proc.pid] if proc.poll() is None else []) + pids, signal.SIGTERM)  # a reaped pid is not ours
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not any(alive(p) for p in pids):
            break
        time.sleep(0.05)
    leftovers = [p for p in [*pids, *job_processes(proc.pid, token)] if alive(p)]
    if proc.poll() is None:
        leftovers.append(proc.pid)
    signal_all(leftovers, signal.SIGKILL)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass


def die_with_parent() -> Callable[[], None]:
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


class SigtermAsInterrupt:
    """While a job runs in the main thread, SIGTERM raises KeyboardInterrupt (so the job is killed, then pytest
    stops as after Ctrl-C) instead of ending the process with the job still running."""

    def __enter__(self) -> "SigtermAsInterrupt":
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


def start_watchdog(root: int, token: str, env: Mapping[str, str], remove: str | None = None
                    ) -> subprocess.Popen | None:
    try:
        return subprocess.Popen([sys.executable, "-m", "pytest_genai.runtime.watchdog", str(os.getpid()), str(root),
                                 token, *([remove] if remove else [])], env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:  # pragma: no cover - the job still runs; only the SIGKILL safety net is missing
        return None


def stop_watchdog(watchdog: subprocess.Popen | None) -> None:
    if watchdog is not None and watchdog.poll() is None:
        watchdog.kill()
        watchdog.wait()


def stop_watchdog_if_done(watchdog: subprocess.Popen | None, proc: subprocess.Popen, token: str) -> None:
    """Stop the watchdog once the job is gone; while any of it lives (a second signal cut ``kill_job`` short) the
    watchdog stays, and kills it when pytest exits."""
    if proc.poll() is not None and not any(alive(p) for p in job_processes(proc.pid, token)):
        stop_watchdog(watchdog)


TAIL_BYTES = 64 * 1024


def tail(path: Path, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
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
        logs[name] = tail(path)
    return logs
