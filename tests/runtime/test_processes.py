"""Each layer of process clean-up on its own: the launcher's end-to-end tests pass while any one layer is broken,
because the others (the watchdog, the plugin's SIGTERM handler) cover for it."""
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

from pytest_genai.runtime.processes import alive


def test_a_child_started_with_die_with_parent_dies_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys, time
        from pytest_genai.runtime.processes import die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], preexec_fn=die_with_parent())
        print(child.pid, flush=True)
        time.sleep(120)
    """)], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        assert select.select([parent.stdout], [], [], 60)[0], "the parent did not start its child in 60 s"
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), "the child outlived the parent that SIGKILL ended"
    finally:
        parent.kill()
        parent.wait(timeout=30)
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


def test_sigterm_while_a_job_runs_is_a_keyboard_interrupt_and_the_old_handler_comes_back():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, signal, time
        from pytest_genai.runtime.processes import SigtermAsInterrupt
        try:
            with SigtermAsInterrupt():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(30)
        except KeyboardInterrupt as exc:
            print("interrupted:", exc)
        print("restored:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    """)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "interrupted: signal 15 (SIGTERM)" in out.stdout and "restored: True" in out.stdout, out.stdout
