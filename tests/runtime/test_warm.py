"""The warm launcher (pytest_genai.runtime.warm): ranks forked from one agent that imported torch once. Results come
back; a raising, exiting or hanging rank fails its job with every rank's log; a hang or an interrupt kills the agent
and its ranks, and the next job starts a new agent."""
import os
import textwrap
import time

import pytest

from pytest_genai.runtime import warm
from pytest_genai.runtime.launcher import TOKEN_ENV, LaunchError, LaunchSpec, launch

pytestmark = pytest.mark.slow  # seconds a test (worker processes, timed loops, real models): .ci/run runs them with -m slow


@pytest.fixture(autouse=True)
def fresh_agent():
    warm.shutdown()
    yield
    warm.shutdown()


def _module(tmp_path, name: str, body: str) -> list[str]:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    return ["-m", name]


def _with_token(token: str) -> list[int]:
    needle = f"{TOKEN_ENV}={token}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                has = needle in fh.read()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if has and state not in (b"Z", b"X"):
            found.append(int(pid))
    return found


RESULT = """
    import json, os

    def main(argv):
        if os.environ["RANK"] == "0":
            json.dump({"world": os.environ["WORLD_SIZE"], "argv": argv, "forked": os.environ.get("%s"),
                       "parent": os.getppid(), "extra": os.environ.get("GENAI_TEST_EXTRA"),
                       "pid": os.getpid(), "sid": os.getsid(0), "frozen": __import__("gc").get_freeze_count()},
                      open(os.environ["PYTEST_GENAI_RESULT"], "w"))
        return 0

    if __name__ == "__main__":  # under a plain torchrun
        import sys
        sys.exit(main(sys.argv[1:]))
""" % warm.RETURN_ENV


def test_ranks_are_forked_from_one_agent_that_serves_every_job(tmp_path):
    worker = _module(tmp_path, "warm_result_worker", RESULT)
    env = {"PYTHONPATH": str(tmp_path), "GENAI_TEST_EXTRA": "first"}
    first = launch([*worker, "a"], LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job1", env=env, warm=True)
    second = launch([*worker, "b"], LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job2",
                    env={**env, "GENAI_TEST_EXTRA": "second"}, warm=True)
    assert first.result["world"] == "2" and first.result["argv"] == ["a"] and first.result["forked"] == "1"
    assert second.result["argv"] == ["b"] and second.result["extra"] == "second"  # each job's own environment
    agent_pid = warm._AGENT.proc.pid
    assert first.result["parent"] == second.result["parent"] == agent_pid  # forked by the same agent
    # each rank leads a session of its own, as under torchrun (autogroup scheduling shares CPU time by session)
    assert first.result["sid"] == first.result["pid"] != os.getsid(agent_pid)
    assert _with_token(warm._AGENT.token) == [agent_pid]  # between jobs only the agent carries the token
    # the agent's objects were frozen before the fork: the ranks' collections leave their pages shared
    assert first.result["frozen"] > 1000 and second.result["frozen"] >= first.result["frozen"]


def test_the_agent_imports_a_worker_modules_warm_imports_once_before_forking_its_ranks(tmp_path):
    (tmp_path / "warm_heavy_dep.py").write_text("import os\nIMPORTED_IN = os.getpid()\n")
    worker = _module(tmp_path, "warm_importing_worker", """
        import json, os, sys

        WARM_IMPORTS = ("warm_heavy_dep", "no_such_module_anywhere")  # a missing one is skipped

        def main(argv):
            dep = sys.modules.get("warm_heavy_dep")  # this module never imports it itself
            if os.environ["RANK"] == "0":
                json.dump({"imported_in": getattr(dep, "IMPORTED_IN", None), "agent": os.getppid(),
                           "me": os.getpid()}, open(os.environ["PYTEST_GENAI_RESULT"], "w"))
            return 0
    """)
    done = launch(worker, LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job", env={"PYTHONPATH": str(tmp_path)},
                  warm=True)
    assert done.result["imported_in"] == done.result["agent"] == warm._AGENT.proc.pid != done.result["me"]


def test_off_switch_runs_a_fresh_torchrun(tmp_path, monkeypatch):
    monkeypatch.setenv(warm.SWITCH_ENV, "0")
    worker = _module(tmp_path, "warm_off_worker", RESULT)
    done = launch(worker, LaunchSpec(nproc=1, timeout_s=120), tmp_path / "job", env={"PYTHONPATH": str(tmp_path)},
                  warm=True)
    assert done.result["forked"] is None and warm._AGENT is None


@pytest.mark.parametrize("case, body, expect_log", [
    ("raises", """
        import os, time

        def main(argv):
            print("rank", os.environ["RANK"], "up", flush=True)
            if os.environ["RANK"] == "1":
                raise RuntimeError("boom from rank 1")
            time.sleep(600)
    """, "boom from rank 1"),
    ("returns_nonzero", """
        import os

        def main(argv):
            print("rank", os.environ["RANK"], "giving up", flush=True)
            return 3 if os.environ["RANK"] == "0" else 0
    """, "giving up"),
], ids=["raises", "returns_nonzero"])
def test_a_failing_rank_fails_its_job_with_every_ranks_log_and_the_agent_serves_on(tmp_path, monkeypatch, case, body,
                                                                                   expect_log):
    worker = _module(tmp_path, f"warm_{case}_worker", body)
    env = {"PYTHONPATH": str(tmp_path)}
    temp = tmp_path / "tmp"  # the agent's temporary folder: torch leaves an error file per failed rank there
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    start = time.monotonic()
    with pytest.raises(LaunchError) as info:
        launch(worker, LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job", env=env, warm=True)
    assert time.monotonic() - start < 60
    err = info.value
    assert not err.timed_out and err.returncode == 1
    text = str(err)
    assert "warm launcher" in text and expect_log in text
    assert "rank 0 stdout" in text and "rank 1 stdout" in text and "rank 1 stderr" in text
    agent = warm._AGENT
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _with_token(agent.token) != [agent.proc.pid]:
        time.sleep(0.1)
    assert _with_token(agent.token) == [agent.proc.pid]  # the failed job's ranks are gone, the agent is not
    assert [p.name for p in temp.iterdir() if p.name.startswith(("pytorch-errorfile", "genai-warm"))] == [
        os.path.basename(agent.tmp)]  # the agent's folder, while it lives; empty: the job's went with it
    assert not os.listdir(agent.tmp)
    ok = _module(tmp_path, "warm_after_worker", RESULT)
    assert launch(ok, LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job2", env=env, warm=True).result["world"] == "2"
    assert warm._AGENT is agent


def test_a_hung_job_is_killed_at_its_timeout_with_the_agent_and_the_next_job_gets_a_new_agent(tmp_path, monkeypatch):
    temp = tmp_path / "tmp"  # killed ranks leave error files in their job's temporary folder: it goes with them
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    hung = _module(tmp_path, "warm_hung_worker", """
        import os, time

        def main(argv):
            print("rank", os.environ["RANK"], "waiting forever", flush=True)
            time.sleep(600)
    """)
    env = {"PYTHONPATH": str(tmp_path)}
    launch(_module(tmp_path, "warm_first_worker", RESULT), LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job0",
           env=env, warm=True)  # the agent is warm: the timeout below covers the job alone
    agent = warm._AGENT
    start = time.monotonic()
    with pytest.raises(LaunchError) as info:
        launch(hung, LaunchSpec(nproc=2, timeout_s=8), tmp_path / "job", env=env, warm=True)
    assert time.monotonic() - start < 8 + 10
    err = info.value
    assert err.timed_out and err.returncode is None
    assert "timed out" in str(err) and "waiting forever" in str(err)
    assert warm._AGENT is None and not agent.alive()
    assert not _with_token(agent.token)  # the agent and both ranks
    assert not [p.name for p in temp.iterdir() if p.name.startswith(("genai-warm", "pytorch-errorfile"))]
    done = launch(_module(tmp_path, "warm_next_worker", RESULT), LaunchSpec(nproc=2, timeout_s=120),
                  tmp_path / "job2", env=env, warm=True)
    assert done.result["world"] == "2" and warm._AGENT is not agent


def test_env_changes():
    assert warm.env_changes({"A": "1", "B": "2"}, {"A": "1", "B": "3", "C": "4"}) == {"B": "3", "C": "4"}
    assert warm.env_changes({"A": "1", "GONE": "x"}, {"A": "1"}) == {"GONE": None}


@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("0", False), ("off", False), ("no", False)])
def test_the_switch(value, on):
    assert warm.enabled({} if value is None else {warm.SWITCH_ENV: value}) is on


HUNG_WARM_TEST = """
from pathlib import Path

from pytest_genai.runtime.launcher import LaunchSpec, launch


def test_hung_warm_job():
    here = Path(__file__).parent
    launch(["-m", "warm_sleeper"], LaunchSpec(nproc=2, timeout_s=300), here / "job", env={"PYTHONPATH": str(here)},
           warm=True)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_pytest_leaves_neither_agent_nor_ranks_behind(tmp_path, sig):
    """SIGTERM (a CI job's timeout) or SIGKILL to a pytest whose warm job hangs: the agent and both ranks end."""
    import signal
    import subprocess
    import sys

    _module(tmp_path, "warm_sleeper", """
        import os, time

        def main(argv):
            print("rank", os.environ["RANK"], "up", os.environ["%s"], flush=True)
            time.sleep(600)
    """ % TOKEN_ENV)
    (tmp_path / "test_hung_warm.py").write_text(HUNG_WARM_TEST)
    temp = tmp_path / "tmp"
    temp.mkdir()
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                              str(tmp_path / "test_hung_warm.py")], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(temp)})
    deadline = time.monotonic() + 120
    up = []
    while time.monotonic() < deadline and len(up) < 2:
        time.sleep(0.2)
        logs = list((tmp_path / "job" / "logs").rglob("stdout.log")) if (tmp_path / "job").exists() else []
        up = [p.read_text().split()[-1] for p in logs if " up " in p.read_text()]
    if len(up) < 2:
        inner.kill()
        pytest.fail("the hung warm job never started both ranks:\n" + inner.communicate(timeout=60)[0].decode()[-2000:])
    token = up[0]
    assert len(_with_token(token)) == 3  # the agent and its two ranks
    inner.send_signal(getattr(signal, sig))
    out, _ = inner.communicate(timeout=60)
    deadline = time.monotonic() + 15  # SIGKILL: the parent-death signal and the watchdog (5 polls a second)
    while time.monotonic() < deadline and _with_token(token):
        time.sleep(0.2)
    assert not _with_token(token), out.decode(errors="replace")[-2000:]
    # the killed ranks' error files: removed by pytest (SIGTERM) or by the watchdog (SIGKILL)
    left = lambda: [p.name for p in temp.iterdir() if p.name.startswith(("genai-warm", "pytorch-errorfile"))]  # noqa
    while time.monotonic() < deadline and left():
        time.sleep(0.2)
    assert not left()
    if sig == "SIGTERM":
        assert b"KeyboardInterrupt" in out or b"Interrupted" in out, out.decode(errors="replace")[-2000:]


def test_an_agent_that_cannot_start_fails_the_job_naming_the_switch_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "PRELOAD", ())
    monkeypatch.setattr(warm, "READY_TIMEOUT_S", 5.0)
    # an interpreter that dies before the agent says ready
    fake = tmp_path / "broken-python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(warm.sys, "executable", str(fake))
    with pytest.raises(LaunchError, match=f"(?s)did not start.*{warm.SWITCH_ENV}=0"):
        launch(_module(tmp_path, "warm_never_worker", RESULT), LaunchSpec(nproc=1, timeout_s=60), tmp_path / "job",
               env={"PYTHONPATH": str(tmp_path)}, warm=True)
    assert warm._AGENT is None
    monkeypatch.setattr(warm.sys, "executable", str(tmp_path / "no-python-here"))  # cannot even be started
    with pytest.raises(LaunchError, match=f"(?s)did not start.*{warm.SWITCH_ENV}=0"):
        launch(["-m", "warm_never_worker"], LaunchSpec(nproc=1, timeout_s=60), tmp_path / "job2",
               env={"PYTHONPATH": str(tmp_path)}, warm=True)


def test_an_agent_killed_during_a_job_fails_that_job_and_its_ranks_are_killed(tmp_path, monkeypatch):
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    killer = _module(tmp_path, "warm_killer_worker", """
        import os, signal, time

        def main(argv):
            print("rank", os.environ["RANK"], "up", flush=True)
            if os.environ["RANK"] == "0":
                time.sleep(0.5)
                os.kill(os.getppid(), signal.SIGKILL)  # the agent
            time.sleep(600)
    """)
    env = {"PYTHONPATH": str(tmp_path)}
    launch(_module(tmp_path, "warm_before_worker", RESULT), LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job0",
           env=env, warm=True)
    agent = warm._AGENT
    with pytest.raises(LaunchError, match="agent exited") as info:
        launch(killer, LaunchSpec(nproc=2, timeout_s=60), tmp_path / "job", env=env, warm=True)
    assert not info.value.timed_out and "rank 1 stdout" in str(info.value)
    assert warm._AGENT is None and not _with_token(agent.token)  # both orphaned ranks were found and killed
    assert not [p.name for p in temp.iterdir() if p.name.startswith(("genai-warm", "pytorch-errorfile"))]
    done = launch(_module(tmp_path, "warm_again_worker", RESULT), LaunchSpec(nproc=2, timeout_s=120),
                  tmp_path / "job2", env=env, warm=True)
    assert done.result["world"] == "2"


def test_a_detached_child_of_a_rank_does_not_outlive_its_job(tmp_path):
    """A rank's child that leaves its session and ignores SIGTERM: found by the launch token once the job is done."""
    marker = str(tmp_path / "detached-marker")
    worker = _module(tmp_path, "warm_detaching_worker", """
        import json, os, subprocess, sys, time

        def main(argv):
            if os.environ["RANK"] == "0":
                subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                  "signal.SIG_IGN); time.sleep(600)", %r], start_new_session=True)
                json.dump({"ok": 1}, open(os.environ["PYTEST_GENAI_RESULT"], "w"))
            return 0
    """ % marker)
    done = launch(worker, LaunchSpec(nproc=2, timeout_s=120), tmp_path / "job", env={"PYTHONPATH": str(tmp_path)},
                  warm=True)
    assert done.result == {"ok": 1}
    agent = warm._AGENT
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _with_token(agent.token) != [agent.proc.pid]:
        time.sleep(0.1)
    assert _with_token(agent.token) == [agent.proc.pid]


def test_an_agent_that_died_idle_is_cleaned_up_before_a_new_one_starts(tmp_path):
    """An agent killed between jobs (the OOM killer) was replaced with its watchdog still running: at the end of the
    session that watchdog signalled the dead agent's pid, which may be another process's by then."""
    worker = _module(tmp_path, "warm_result_worker", RESULT)
    env = {"PYTHONPATH": str(tmp_path)}
    launch(worker, LaunchSpec(nproc=1, timeout_s=120), tmp_path / "job1", env=env, warm=True)
    old = warm._AGENT
    old.proc.kill()
    old.proc.wait()
    launch(worker, LaunchSpec(nproc=1, timeout_s=120), tmp_path / "job2", env=env, warm=True)
    assert warm._AGENT is not old
    assert old.watchdog is None or old.watchdog.poll() is not None  # stopped, not left to signal a stale pid
    assert not os.path.exists(old.tmp)


def test_an_interrupt_while_the_agent_warms_up_kills_it(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, which becomes one) during the agent's start-up: nothing held the half-started agent, so it
    kept running (importing torch, spinning) for the rest of the session and its folder stayed."""
    seen = []

    def interrupted(self, timeout):
        seen.append(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(warm.WarmAgent, "_answer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        launch(_module(tmp_path, "warm_interrupted_worker", RESULT), LaunchSpec(nproc=1, timeout_s=60),
               tmp_path / "job", env={"PYTHONPATH": str(tmp_path)}, warm=True)
    (agent,) = seen
    deadline = time.monotonic() + 10
    while agent.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not agent.alive() and not _with_token(agent.token) and not os.path.exists(agent.tmp)
