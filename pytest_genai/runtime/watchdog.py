"""Kill a distributed job whose launching process died:
``python -m pytest_genai.runtime.watchdog PARENT ROOT TOKEN [FOLDER]``.

A pytest killed with SIGKILL runs no cleanup, and torchrun's workers live in sessions of their own, so nothing would
stop them. The launcher starts this watchdog beside each job: it polls the launching process (PARENT) and, once that
is gone, kills torchrun (ROOT) and every process carrying the launch TOKEN
(:func:`pytest_genai.runtime.launcher.kill_job`'s search), removes FOLDER (the job's temporary files) if given,
then exits. When the job ends normally the launcher terminates the watchdog. It imports nothing heavy.
"""
from __future__ import annotations

import signal
import sys
import time

POLL_S = 0.2


def watch(parent: int, root: int, token: str, poll_s: float = POLL_S, remove: str | None = None) -> int:
    from pytest_genai.runtime.processes import alive, signal_all, is_launch_process, job_processes

    while alive(parent):  # a job that ends normally: the launcher terminates this process
        time.sleep(poll_s)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        # torchrun itself only while its pid is still torchrun (a reaped one's pid may be another process's now)
        signal_all([root] * is_launch_process(root, token) + job_processes(root, token), sig)
        time.sleep(1.0 if sig == signal.SIGTERM else 0)
    if remove:
        import shutil

        shutil.rmtree(remove, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 4) or not args[0].isdigit() or not args[1].isdigit():
        print("usage: python -m pytest_genai.runtime.watchdog PARENT_PID TORCHRUN_PID TOKEN [FOLDER]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is the launcher's to handle
    return watch(int(args[0]), int(args[1]), args[2], remove=args[3] if len(args) == 4 else None)


if __name__ == "__main__":
    raise SystemExit(main())
