"""The torchrun launcher: results come back; a raising, hanging or failing worker fails fast, with every rank's
log tail, and leaves nothing running."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from pytest_genai.runtime.launcher import TOKEN_ENV, LaunchError, LaunchSpec, launch, torchrun_command

pytestmark = pytest.mark.slow  # seconds a test (worker processes, timed loops, real models): .ci/run runs them with -m slow

TIMEOUT_S = 6.0  # each case must end well inside this (torchrun start-up is about 2 s here)


def _script(tmp_path, body: str):
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(body))
    return [str(path)]


def _no_leftovers(tmp_path):
    """No live process still runs this test's worker script."""
    needle = str(tmp_path).encode()
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state not in (b"Z", b"X"):
            left.append(pid)
    return left


def test_rank0_result_comes_back(tmp_path):
    worker = _script(tmp_path, """
        import json, os
        if os.environ["RANK"] == "0":
            json.dump({"world": os.environ["WORLD_SIZE"], "token": bool(os.environ.get("%s"))},
                      open(os.environ["PYTEST_GENAI_RESULT"], "w"))
    """ % TOKEN_ENV)
    done = launch(worker, LaunchSpec(nproc=2, timeout_s=60), tmp_path / "job")
    assert done.result == {"world": "2", "token": True}
    assert not _no_leftovers(tmp_path)


@pytest.mark.parametrize("case, body, timed_out, expect_log", [
    ("raises", """
        import os, time
        if os.environ["RANK"] == "1":
            raise RuntimeError("boom from rank 1")
        time.sleep(600)
    """, False, "boom from rank 1"),
    ("hangs", """
        import os, time
        print("rank", os.environ["RANK"], "waiting forever", flush=True)
        time.sleep(600)
    """, True, "waiting forever"),
    ("exits_nonzero", """
        import os, sys
        print("rank", os.environ["RANK"], "giving up", flush=True)
        sys.exit(3 if os.environ["RANK"] == "0" else 0)
    """, False, "giving up"),
], ids=["raises", "hangs", "exits_nonzero"])
def test_failing_worker_fails_fast_with_every_ranks_log(tmp_path, case, body, timed_out, expect_log):
    start = time.monotonic()
    with pytest.raises(LaunchError) as info:
        launch(_script(tmp_path, body), LaunchSpec(nproc=2, timeout_s=TIMEOUT_S), tmp_path / "job")
    elapsed = time.monotonic() - start
    err = info.value
    assert elapsed < TIMEOUT_S + 6, f"{case}: took {elapsed:.1f} s"
    assert err.timed_out is timed_out
    assert (err.returncode is None) if timed_out else (err.returncode != 0)
    text = str(err)
    assert expect_log in text
    assert "rank 0 stdout" in text and "rank 1 stdout" in text and "rank 1 stderr" in text
    assert ("timed out" in text) if timed_out else ("exit code" in text)
    assert not _no_leftovers(tmp_path), f"{case}: processes left running"


def test_a_relaunch_in_the_same_folder_reports_its_own_logs(tmp_path):
    """RunCache(fresh=True) relaunches into the same work_dir: rank logs were named by rank over every run's
    folder, so the earlier run's 'rank 0 stderr' could stand in for the failure's."""
    import json as _json

    ok = """
        import json, os, sys
        print("earlier run, all fine", file=sys.stderr, flush=True)
        if os.environ["RANK"] == "0":
            open(os.environ["PYTEST_GENAI_RESULT"], "w").write(json.dumps({"ok": 1}))
    """
    first = launch(_script(tmp_path, ok), LaunchSpec(nproc=1, timeout_s=60), tmp_path / "job")
    second = launch(_script(tmp_path, ok), LaunchSpec(nproc=1, timeout_s=60), tmp_path / "job")
    assert first.result == second.result == {"ok": 1}
    assert first.log_dir != second.log_dir and first.log_dir.parent == second.log_dir.parent  # one folder per launch
    assert len(list(second.log_dir.rglob("stderr.log"))) == 1
    with pytest.raises(LaunchError) as info:
        launch(_script(tmp_path, "import sys; sys.exit('the relaunch failed')\n"), LaunchSpec(nproc=1, timeout_s=60),
               tmp_path / "job")
    assert "the relaunch failed" in str(info.value) and "earlier run" not in str(info.value)
    assert _json.dumps(info.value.logs).count("rank 0 stderr") == 1


def test_multi_node_rendezvous_ids_are_the_launch_numbers_on_every_node():
    """Without a node rank (no Slurm) the nodes meet in a c10d rendezvous by id: a random id per node never met."""
    code = "from pytest_genai.runtime.launcher import next_rendezvous_id as n; print(n(), n(), n())"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1] == "genai-1 genai-2 genai-3\n"


def test_exit_zero_without_result_is_an_error(tmp_path):
    with pytest.raises(LaunchError, match="wrote no readable result"):
        launch(_script(tmp_path, "pass\n"), LaunchSpec(nproc=1, timeout_s=60), tmp_path / "job")


def test_commands_single_and_multi_node(tmp_path):
    single = torchrun_command(LaunchSpec(nproc=4), tmp_path, ["-m", "w"], "run1")
    assert "--standalone" in single and "--nproc-per-node=4" in single and single[-2:] == ["-m", "w"]
    multi = torchrun_command(LaunchSpec(nproc=8, nnodes=2, rdzv_endpoint="node1:29500", node_rank=1), tmp_path,
                             ["w.py"], "run1")
    assert "--standalone" not in multi
    # a known node rank: static rendezvous, so node 0 hosts global rank 0 (c10d would assign ranks by arrival)
    assert {"--nnodes=2", "--node-rank=1", "--master-addr=node1", "--master-port=29500"} <= set(multi)
    elastic = torchrun_command(LaunchSpec(nproc=8, nnodes=2, rdzv_endpoint="node1:29500"), tmp_path, ["w.py"], "run1")
    assert {"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=node1:29500", "--rdzv-id=run1"} <= set(elastic)


def test_slurm_environment_gives_node_rank_and_job_id():
    spec = LaunchSpec.from_env(nproc=8, nnodes=2, rdzv_endpoint="n1:29500",
                               env={"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_NODEID": "1"})
    assert spec.node_rank == 1 and spec.rdzv_id == "slurm-4242" and spec.world_size == 16
    assert LaunchSpec.from_env(nproc=2, env={"SLURM_JOB_ID": "1"}).rdzv_id is None  # one node: standalone


def test_outside_a_job_step_the_slurm_node_id_is_not_a_node_rank():
    """A batch script's own shell has SLURM_NODEID=0 too: pytest started there (or by ssh on each node) took node 0
    on every node and the static rendezvous waited for a node 1 that never came. As runtime.slurm.from_env: only
    inside a job step (SLURM_STEP_ID) does Slurm's node id name the node."""
    spec = LaunchSpec.from_env(nproc=8, nnodes=2, rdzv_endpoint="n1:29500",
                               env={"SLURM_JOB_ID": "4242", "SLURM_NODEID": "0"})
    assert spec.node_rank is None and spec.rdzv_id is None  # c10d rendezvous: node ranks by arrival


@pytest.mark.parametrize("kwargs, message", [
    ({"nproc": 0}, "--genai-nproc"), ({"nnodes": 2}, "--genai-rdzv-endpoint"),
    ({"rdzv_endpoint": "nohostport"}, "host:port"), ({"timeout_s": 0}, "--genai-timeout"),
])
def test_bad_spec_names_the_option(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LaunchSpec(**kwargs)


def test_two_nodes_rendezvous_and_node0_holds_the_result(tmp_path):
    """Two launches on this machine play two nodes of one job (static rendezvous on a local port)."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    worker = _script(tmp_path, """
        import json, os
        if os.environ["RANK"] == "0":
            json.dump({"world": int(os.environ["WORLD_SIZE"]), "node": int(os.environ["GROUP_RANK"])},
                      open(os.environ["PYTEST_GENAI_RESULT"], "w"))
    """)
    specs = [LaunchSpec(nproc=1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{port}", node_rank=n, rdzv_id="t",
                        timeout_s=60) for n in (0, 1)]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda n: launch(worker, specs[n], tmp_path / f"node{n}"), (0, 1)))
    assert done[0].result == {"world": 2, "node": 0}
    assert done[1].result is None


def test_two_nodes_under_c10d_rendezvous_one_holds_the_result_and_the_other_none(tmp_path):
    """No node rank known (several nodes, not Slurm): c10d assigns node ranks in arrival order, so either launch may
    host global rank 0. The other node's launch raised "rank 0 wrote no readable result" and failed its test."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    worker = _script(tmp_path, """
        import os
        import torch.distributed as dist
        from pytest_genai.runtime.rank import finish
        dist.init_process_group("gloo")
        finish({"world": dist.get_world_size(), "node": int(os.environ["GROUP_RANK"])}
               if os.environ["RANK"] == "0" else None)
    """)
    spec = LaunchSpec(nproc=1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{port}", rdzv_id="c10d-test", timeout_s=120)
    assert spec.node_rank is None
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda n: launch(worker, spec, tmp_path / f"node{n}"), (0, 1)))
    assert sorted((d.result is None) for d in done) == [False, True]
    assert next(d.result for d in done if d.result is not None) == {"world": 2, "node": 0}


HUNG_JOB_TEST = """
import sys
from pathlib import Path

from pytest_genai.runtime.launcher import LaunchSpec, launch


def test_hung_job():
    worker = Path(__file__).with_name("hung_worker.py")
    launch([str(worker)], LaunchSpec(nproc=2, timeout_s=300), Path(__file__).parent / "job")
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_pytest_leaves_no_process_behind(tmp_path, sig):
    """SIGTERM (a CI job's timeout) or SIGKILL to a pytest running a hung 2-rank job: torchrun and both ranks end."""
    import signal
    import subprocess
    import sys

    (tmp_path / "hung_worker.py").write_text("import os, time\nprint('rank', os.environ['RANK'], 'up', flush=True)\n"
                                             "time.sleep(600)\n")
    (tmp_path / "test_hung.py").write_text(HUNG_JOB_TEST)
    pytest_proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                                    "no:randomly", str(tmp_path / "test_hung.py")], cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_ranks_up(tmp_path)) < 2:
        time.sleep(0.2)
    if len(_ranks_up(tmp_path)) < 2:
        pytest_proc.kill()
        out, _ = pytest_proc.communicate(timeout=60)
        pytest.fail("the hung job never started both ranks; the inner pytest said:\n"
                    + out.decode(errors="replace")[-2000:])
    pytest_proc.send_signal(getattr(signal, sig))
    out, _ = pytest_proc.communicate(timeout=60)
    deadline = time.monotonic() + 15  # SIGKILL: the watchdog polls 5 times a second, then SIGTERM, 1 s, SIGKILL
    while time.monotonic() < deadline and _no_leftovers(tmp_path):
        time.sleep(0.2)
    assert not _no_leftovers(tmp_path), out.decode(errors="replace")[-2000:]
    if sig == "SIGTERM":
        assert b"KeyboardInterrupt" in out or b"Interrupted" in out, out.decode(errors="replace")[-2000:]


def _ranks_up(tmp_path):
    """Ranks of the hung job whose 'up' line is in their log."""
    logs = list((tmp_path / "job" / "logs").rglob("stdout.log")) if (tmp_path / "job" / "logs").exists() else []
    return [p for p in logs if b" up" in p.read_bytes()]


def test_a_worker_re_parented_out_of_torchruns_tree_is_still_killed(tmp_path):
    """A worker's child that detaches (own session, ignores SIGTERM) and outlives its parent is no descendant of
    torchrun any more: only the launch-token search finds it. The job fails; nothing may be left running."""
    marker = str(tmp_path / "detached-marker")
    worker = _script(tmp_path, """
        import os, subprocess, sys, time
        if os.environ["RANK"] == "0":
            subprocess.Popen([sys.executable, "-c",
                              "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
                              %r], start_new_session=True)
            time.sleep(0.5)
            raise RuntimeError("rank 0 fails after leaving a detached child")
        time.sleep(600)
    """ % marker)
    with pytest.raises(LaunchError, match="exit code"):
        launch(worker, LaunchSpec(nproc=2, timeout_s=60), tmp_path / "job")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _no_leftovers(tmp_path):
        time.sleep(0.2)
    assert not _no_leftovers(tmp_path)


def test_the_log_tail_reads_only_the_end_of_a_large_log(tmp_path, monkeypatch):
    """A rank's log of gigabytes (NCCL_DEBUG=INFO) was read whole to show its last 30 lines; only the last 64 KiB
    are read now, the partial first line of that window is dropped, and bytes that are not UTF-8 are replaced."""
    import builtins

    from pytest_genai.runtime import processes

    log = tmp_path / "rank0.log"
    with open(log, "wb") as fh:
        fh.write(b"x" * 200_000 + b"\n")  # one long line the window starts inside of
        fh.write(b"".join(b"line %d \xff\n" % i for i in range(5000)))
    read_sizes = []
    real_open = builtins.open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def seek(self, *a):
            return self.fh.seek(*a)

        def read(self, n=-1):
            data = self.fh.read(n)
            read_sizes.append(len(data))
            return data

    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: Counting(real_open(p, *a, **k)) if str(p) == str(log)
                        else real_open(p, *a, **k))
    tail = processes.tail(log)
    lines = tail.splitlines()
    assert len(lines) == processes.TAIL_LINES and lines[-1] == "line 4999 \ufffd" and lines[0] == "line 4970 \ufffd"
    assert sum(read_sizes) <= processes.TAIL_BYTES
    short = tmp_path / "short.log"
    short.write_bytes(b"first\nsecond\n")
    assert processes.tail(short) == "first\nsecond"  # a log under the window keeps its first line


def test_a_recycled_torchrun_pid_does_not_take_its_new_owners_children_with_the_job(tmp_path):
    """After torchrun is reaped its pid can name another process: the descendant walk (and the watchdog's signal to
    torchrun) then reached that process and its children. Only a root that still carries the launch token is
    walked; processes carrying the token are found either way."""
    import subprocess
    import sys

    from pytest_genai.runtime.processes import is_launch_process, job_processes

    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    stranger = subprocess.Popen([sys.executable, "-c", code], env={k: v for k, v in os.environ.items()
                                                                   if k != TOKEN_ENV})
    ours = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, TOKEN_ENV: "tok-recycled"})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (_kids(stranger.pid) and _kids(ours.pid)):
            time.sleep(0.05)
        assert _kids(stranger.pid) and _kids(ours.pid)
        assert not is_launch_process(stranger.pid, "tok-recycled") and is_launch_process(ours.pid, "tok-recycled")
        # the token's processes, not the stranger's children
        assert sorted(job_processes(stranger.pid, "tok-recycled")) == sorted([ours.pid, *_kids(ours.pid)])
        assert set(_kids(ours.pid)) <= set(job_processes(ours.pid, "tok-recycled"))
    finally:
        for p in (stranger, ours):
            for kid in _kids(p.pid):
                os.kill(kid, 9)
            p.kill()
            p.wait()


def _kids(pid: int) -> list[int]:
    from pytest_genai.runtime.processes import children

    return sorted(children(pid))


def test_the_child_side_of_the_parent_death_signal_imports_and_loads_nothing():
    """Between fork and exec the child imported ctypes and dlopen'ed libc, which can deadlock when another thread of
    pytest held the import lock or the loader's lock at the fork (a job that "times out" with empty logs). libc's
    prctl is looked up in the parent now; the child only calls it (and exits if its parent is already gone)."""
    import dis

    from pytest_genai.runtime.processes import die_with_parent

    child = die_with_parent()
    ops = {i.opname for i in dis.get_instructions(child)}
    names = set(child.__code__.co_names)
    assert "IMPORT_NAME" not in ops and not names & {"ctypes", "CDLL", "import_module"}, (ops, names)
    import subprocess
    import sys

    # in a real child: it runs, execs and exits 0 (a parent that is still there is not mistaken for a dead one)
    done = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=child, timeout=60)
    assert done.returncode == 0
