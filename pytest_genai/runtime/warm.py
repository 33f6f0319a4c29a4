"""A warm launcher for one-node CPU jobs: torch's elastic agent (what ``torchrun`` runs) kept in one process that has
imported torch and transformers once, forking each job's ranks instead of starting fresh interpreters.

Why: a ``torchrun`` job spends seconds before its first step (torchrun imports torch, then each rank imports
transformers), and the suite launches many jobs. Here the agent imports them once
and each job's ranks are forked from it (``start_method="fork"``) with the same rendezvous, environment, log layout
(``--log-dir``, ``--redirects=3``), per-job process group and one session per rank as ``torchrun --standalone``: a job
is still its own set of processes, so a crash fails only its job.

Protocol: the agent (``python -m pytest_genai.runtime.warm``) prints ``{"ready": true}`` once warm, then reads one
JSON request per line on stdin (the torchrun flags, the worker module and argv, the environment changes) and answers
one JSON line per job on its original stdout: ``{"ok": true}`` or ``{"ok": false, "error": ...}``. Its own fd 1 and
2 (and so anything a library prints) go to its log file. It exits when stdin closes.

The client (:class:`WarmAgent`, used by :func:`pytest_genai.runtime.launcher.launch`) keeps what the launcher
guarantees: the agent gets a parent-death signal and a watchdog, carries the launch token (so do the forked ranks,
whose environment is the agent's), and a job that hangs past its timeout or an interrupt kills the agent and every
rank; the next job starts a new agent. Only for one node without an explicit rendezvous endpoint, and only where
the caller asks (the fine-tuning jobs on the CPU: CUDA must not be initialized before a fork, Gaudi runs its own
launcher; the DDP scaling benchmarks keep plain torchrun, their claims compare one rank with two);
``PYTEST_GENAI_WARM_LAUNCH=0`` turns it off.
"""
from __future__ import annotations

import gc
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Set in a forked rank: :func:`pytest_genai.runtime.rank.finish` returns instead of ``os._exit`` (the elastic
#: agent reads each rank's return value; the forked process then exits without interpreter teardown anyway).
RETURN_ENV = "PYTEST_GENAI_RANK_RETURNS"
#: ``0`` turns the warm launcher off (every job through a fresh ``torchrun``).
SWITCH_ENV = "PYTEST_GENAI_WARM_LAUNCH"
READY_TIMEOUT_S = 180.0
#: What the agent imports before its first fork (what the workers import at their start); each job's worker module
#: is imported by the agent before its ranks are forked.
PRELOAD = ("torch", "torch.distributed", "torch.distributed.run", "transformers", "transformers.modeling_utils",
           "transformers.models.llama.modeling_llama", "pytest_genai.runtime.rank")

_RESPONSE_FD: int | None = None  # the agent's answer channel; a forked rank closes its copy


def enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get(SWITCH_ENV, "1").strip() not in ("0", "no", "false", "off")


# --- the agent --------------------------------------------------------------------------------------------------


def _rank_entry(module: str, argv: list[str], env: dict[str, str | None]) -> None:
    """What each forked rank runs: the job's environment changes, then the worker module's ``main(argv)``."""
    import importlib

    # torchrun starts each rank in a session of its own; so does this. With the kernel's autogroup scheduling
    # (Linux's default) CPU time is shared between sessions first: ranks left in the agent's session would split
    # one session's share under load.
    os.setsid()
    if _RESPONSE_FD is not None:
        try:
            os.close(_RESPONSE_FD)
        except OSError:
            pass
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    os.environ[RETURN_ENV] = "1"
    if env.get("PYTHONPATH"):  # a fresh interpreter would have these on its path
        sys.path[:0] = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and p not in sys.path]
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:  # a fresh interpreter's torch would start with this many
        import torch

        torch.set_num_threads(int(threads))
    code = importlib.import_module(module).main(list(argv))
    if code:
        raise RuntimeError(f"{module}.main({argv}) returned {code}")


def _serve(request: Mapping[str, Any]) -> dict[str, Any]:
    import importlib

    import torch.distributed.run as trun
    from torch.distributed.launcher.api import elastic_launch

    args = trun.parse_args([*request["torchrun_args"], "--start-method=fork", request["module"]])
    args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())  # --standalone
    if args.master_port is None:
        args.master_port = 29500
    config, _cmd, _cmd_args = trun.config_from_args(args)
    try:
        # once in the agent: the ranks it forks start with the module imported, and with what the module lists in
        # ``WARM_IMPORTS`` (heavy imports its code makes later, e.g. inside functions)
        worker = importlib.import_module(request["module"])
    except Exception:  # the rank's own import will raise it, into that rank's log
        worker = None
    for name in getattr(worker, "WARM_IMPORTS", ()):
        try:
            importlib.import_module(name)
        except Exception:  # not installed: the rank that needs it reports that
            pass
    # torch's process starter leaves one ``pytorch-errorfile-*.pickle`` per failed rank in the temporary folder, and
    # nobody removes them: each job gets a folder of its own. The client made it and removes it, also when it kills
    # the agent mid-job (a timeout, an interrupt: the ranks write their error files as they die, and no code here
    # runs on); the client's watchdog removes it if the client itself is killed.
    job_tmp = request.get("tmp") or tempfile.mkdtemp(prefix="genai-warm-job-")
    before, tempfile.tempdir = tempfile.tempdir, job_tmp
    # Python's advice for a process that forks without exec: freeze what exists (after collecting this job's
    # garbage-to-be), so that the ranks' collections never walk or write the agent's objects (no copy-on-write of
    # their pages), and a warm job's steps time as a plain torchrun job's do.
    gc.collect()
    gc.freeze()
    try:
        elastic_launch(config=config, entrypoint=_rank_entry)(request["module"], request["argv"], request["env"])
    except Exception as exc:  # ChildFailedError (a rank raised or died) or a rendezvous failure
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[-3000:]}"}
    finally:
        tempfile.tempdir = before
        if not request.get("tmp"):
            shutil.rmtree(job_tmp, ignore_errors=True)
    return {"ok": True}


def agent_main(argv: list[str] | None = None) -> int:  # pragma: no cover - runs as the agent process
    global _RESPONSE_FD
    import importlib

    args = sys.argv[1:] if argv is None else argv
    log_path = args[0] if args else os.devnull
    _RESPONSE_FD = os.dup(1)
    answers = os.fdopen(_RESPONSE_FD, "w", buffering=1, encoding="utf-8", closefd=False)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a missing optional import only costs its start-up later
            print(f"warm agent: preload {name} failed: {exc!r}", file=sys.stderr, flush=True)
    answers.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = _serve(json.loads(line))
        except Exception as exc:  # a malformed request: answer it, keep serving
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.flush()
        sys.stderr.flush()
        answers.write(json.dumps(answer) + "\n")
    return 0


# --- the client (the pytest process) --------------------------------------------------------------------------


class AgentGone(RuntimeError):
    """The agent exited or stopped answering; its log's tail is in the message."""


class WarmAgent:
    """One agent process and its watchdog; :meth:`run` one job at a time."""

    def __init__(self, env: Mapping[str, str], log_path: Path):
        from pytest_genai.runtime.processes import TOKEN_ENV, die_with_parent, start_watchdog

        self.env = dict(env)
        self.token = self.env[TOKEN_ENV]
        self.log_path = Path(log_path)
        # Each job's ranks get a temporary folder of their own (torch leaves an error file per failed rank there),
        # inside one folder for this agent: removed here, or by the watchdog if this process is killed.
        where = self.env.get("TMPDIR")  # where the agent's own temporary files would go
        self.tmp = tempfile.mkdtemp(prefix="genai-warm-", dir=where if where and os.path.isdir(where) else None)
        self._job_tmp: str | None = None
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "pytest_genai.runtime.warm", str(self.log_path)],
                                         env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=die_with_parent())
        except OSError as exc:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise AgentGone(f"the warm launcher's agent did not start ({exc}); {SWITCH_ENV}=0 launches every job "
                            "through a fresh torchrun") from None
        watchdog_env = {k: v for k, v in self.env.items() if k != TOKEN_ENV}
        self.watchdog = start_watchdog(self.proc.pid, self.token, watchdog_env, remove=self.tmp)
        self._buffer = b""
        try:
            ready = self._answer(READY_TIMEOUT_S)
            if not ready.get("ready"):
                raise AgentGone(f"it answered {ready}")
        except (TimeoutError, AgentGone, ValueError) as exc:
            self.kill()
            raise AgentGone(f"the warm launcher's agent did not start ({exc}); {SWITCH_ENV}=0 launches every job "
                            f"through a fresh torchrun{self.log_tail()}") from None
        except BaseException:  # Ctrl-C / SIGTERM during the warm-up: no one else holds this agent to stop it
            self.kill()
            raise

    def log_tail(self, lines: int = 30) -> str:
        from pytest_genai.runtime.processes import tail

        return f"\n----- warm agent log (last {lines} lines) -----\n{tail(self.log_path, lines)}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _answer(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        out = self.proc.stdout
        assert out is not None
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer from the warm agent within {timeout_s:g} s")
            ready, _, _ = select.select([out], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(out.fileno(), 65536)
                if not chunk:
                    raise AgentGone(f"the warm launcher's agent exited (code {self.proc.wait()})")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def run(self, torchrun_args: Sequence[str], module: str, argv: Sequence[str], env: Mapping[str, str | None],
            timeout_s: float) -> dict[str, Any]:
        """One job; its answer. TimeoutError past ``timeout_s``, AgentGone if the agent died (kill it after either)."""
        self._drop_job_tmp()
        self._job_tmp = tempfile.mkdtemp(prefix="job-", dir=self.tmp)
        request = {"torchrun_args": list(torchrun_args), "module": module, "argv": list(argv), "env": dict(env),
                   "tmp": self._job_tmp}
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise AgentGone(f"the warm launcher's agent exited (code {self.proc.poll()}){self.log_tail()}") from None
        try:
            answer = self._answer(timeout_s)
        except AgentGone as exc:
            raise AgentGone(f"{exc}{self.log_tail()}") from None
        self._drop_job_tmp()  # answered: its ranks are gone
        return answer

    def _drop_job_tmp(self) -> None:
        """Remove the current job's temporary folder; only once its ranks are gone (answered, or killed)."""
        if self._job_tmp:
            shutil.rmtree(self._job_tmp, ignore_errors=True)
            self._job_tmp = None

    def kill(self) -> None:
        """The agent, every rank it forked and its watchdog."""
        from pytest_genai.runtime.processes import stop_watchdog, kill_job

        kill_job(self.proc, self.token)
        stop_watchdog(self.watchdog)
        self._job_tmp = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def close(self, grace_s: float = 10.0) -> None:
        """Stop after the current job: close stdin, wait, then kill whatever is left (the agent, and any process
        still carrying its launch token)."""
        import signal

        from pytest_genai.runtime.processes import alive, signal_all, stop_watchdog, token_processes

        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=grace_s)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.alive():
            self.kill()
        signal_all([p for p in token_processes(self.token) if alive(p)], signal.SIGKILL)
        stop_watchdog(self.watchdog)
        self._job_tmp = None
        shutil.rmtree(self.tmp, ignore_errors=True)


_AGENT: WarmAgent | None = None


def agent(env: Mapping[str, str], log_path: Path) -> WarmAgent:
    """The session's agent, started on first use (or after the previous one was killed)."""
    global _AGENT
    if _AGENT is None or not _AGENT.alive():
        import atexit

        if _AGENT is not None:  # died while idle (e.g. the OOM killer): stop its watchdog, remove its folder
            _AGENT.kill()
        _AGENT = WarmAgent(env, log_path)
        atexit.register(shutdown)
    return _AGENT


def discard() -> None:
    """Kill the session's agent (after a timeout, an interrupt or its death); the next job starts a new one."""
    global _AGENT
    if _AGENT is not None:
        _AGENT.kill()
        _AGENT = None


def shutdown() -> None:
    """Stop the session's agent (pytest's unconfigure, and at exit)."""
    global _AGENT
    if _AGENT is not None:
        _AGENT.close()
        _AGENT = None


def env_changes(base: Mapping[str, str], wanted: Mapping[str, str]) -> dict[str, str | None]:
    """What turns ``base`` into ``wanted``: changed or new keys with their values, removed keys with None."""
    changes: dict[str, str | None] = {k: v for k, v in wanted.items() if base.get(k) != v}
    changes.update({k: None for k in base if k not in wanted})
    return changes


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(agent_main())
