"""The bare torchrun DDP script (the baseline the launcher's overhead is measured against): its command, its
output, the comparison, and how a hung or interrupted job ends (a sleeping stand-in;
benchmarks/test_finetune.py::test_launcher_vs_bare_cpu runs the real one)."""
import dataclasses
import json
import statistics
import sys

import pytest

from pytest_genai.train import bare_ddp
from pytest_genai.train.config import ThroughputConfig, from_json
from pytest_genai.train.lora import LoraSpec

CFG = ThroughputConfig(model="llama-3.1-8b", steps=6, warmup=2)


def test_command_is_plain_torchrun_with_the_config_as_json():
    cmd = bare_ddp.command(CFG, 2)
    assert cmd[:5] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    assert cmd[5:7] == ["-m", "pytest_genai.train.bare_ddp"]
    assert from_json(json.loads(cmd[7])) == CFG
    assert not any(arg.startswith(("--log-dir", "--redirects", "--monitor-interval")) for arg in cmd)


@pytest.mark.parametrize("change", [dict(strategy="fsdp"), dict(precision="amp"), dict(lora=LoraSpec())])
def test_the_bare_script_only_runs_ddp_fp32_full_fine_tuning(change):
    with pytest.raises(ValueError, match="bare DDP script runs"):
        bare_ddp.command(dataclasses.replace(CFG, **change), 2)


def test_parse_output_takes_rank_zeros_json_line_among_other_output():
    line = json.dumps({"bare_ddp": {"step_s": [[0.1, 0.2], [0.3, 0.1]], "losses": [7.0, 6.9], "threads": 1}})
    out = bare_ddp.parse_output(f"warning: OMP_NUM_THREADS\n{{not json\n{line}\n")
    assert out["step_s"] == [[0.1, 0.2], [0.3, 0.1]] and out["threads"] == 1
    with pytest.raises(ValueError, match="no 'bare_ddp' JSON line"):
        bare_ddp.parse_output('{"other": 1}\n')
    with pytest.raises(ValueError, match="no per-rank step times"):
        bare_ddp.parse_output(json.dumps({"bare_ddp": {"step_s": [[], [0.1]], "losses": [], "threads": 1}}))


def test_launcher_vs_bare_is_the_inverse_ratio_of_median_steps_after_warm_up():
    suite = [9.0, 9.0, 0.10, 0.11, 0.12, 0.10, 0.11]  # two slow warm-up steps, not counted
    bare = [5.0, 5.0, 0.10, 0.10, 0.10, 0.10, 0.10]
    c = bare_ddp.launcher_vs_bare([suite], [bare, bare], warmup=2)
    assert c.suite_step_s == (statistics.median(suite[2:]),) == (0.11,)
    assert c.bare_step_s == (0.10, 0.10)
    assert c.ratio == pytest.approx(0.10 / 0.11)
    assert c.interval.lo <= c.ratio <= c.interval.hi and c.interval.n == 5
    assert bare_ddp.launcher_vs_bare([suite], [bare, bare], warmup=2) == c  # seeded bootstrap: reproducible
    with pytest.raises(ValueError, match="no timed steps"):
        bare_ddp.launcher_vs_bare([suite[:2]], [bare, bare], warmup=2)


@pytest.mark.parametrize("suite_jobs, bare_jobs", [(0, 1), (1, 1), (2, 2), (2, 4)])
def test_launcher_vs_bare_needs_bare_jobs_around_every_suite_job(suite_jobs, bare_jobs):
    steps = [1.0, 0.1, 0.1, 0.1]
    with pytest.raises(ValueError, match="one more bare job than suite jobs"):
        bare_ddp.launcher_vs_bare([steps] * suite_jobs, [steps] * bare_jobs, warmup=1)


def test_one_suite_job_spans_the_intervals_against_each_bare_job():
    suite = [1.0] * 2 + [0.10, 0.11, 0.10, 0.11, 0.10, 0.11]
    faster, slower = [1.0] * 2 + [0.08, 0.09] * 3, [1.0] * 2 + [0.12, 0.13] * 3
    alone = bare_ddp.launcher_vs_bare([suite], [faster, faster], warmup=2)
    both = bare_ddp.launcher_vs_bare([suite], [faster, slower], warmup=2)
    assert alone.interval.hi < 0.95  # the faster bare run alone would call the suite slow ...
    assert both.interval.lo < 0.95 < both.interval.hi  # ... the slower one after it says the machine changed
    assert both.bare_step_s == pytest.approx((0.085, 0.125)) and both.ratio == pytest.approx(0.105 / 0.105)


def _job(rng, median, n=40, jitter=0.1):
    return [5.0] * 3 + [median * (1 + rng.gauss(0, jitter)) for _ in range(n)]


def test_alternated_jobs_judge_equal_programs_equal_and_a_slow_suite_slow():
    import random

    rng = random.Random(3)
    same = bare_ddp.launcher_vs_bare([_job(rng, 0.057) for _ in range(2)], [_job(rng, 0.057) for _ in range(3)], 3)
    assert same.interval.lo > 0.95 and same.interval.lo < 1.0 < same.interval.hi
    assert "two-stage" in same.interval.method and len(same.suite_step_s) == 2 and len(same.bare_step_s) == 3
    slow = bare_ddp.launcher_vs_bare([_job(rng, 0.077) for _ in range(2)], [_job(rng, 0.057) for _ in range(3)], 3)
    assert slow.interval.hi < 0.95  # a 20 ms sleep per step: a clear fail


def test_a_load_change_between_alternated_jobs_widens_the_interval():
    import random

    rng = random.Random(4)
    steady = bare_ddp.launcher_vs_bare([_job(rng, 0.057) for _ in range(2)], [_job(rng, 0.057) for _ in range(3)], 3)
    # the machine got 15% slower after the first bare job: the suite's jobs and the last bare jobs ran slower
    changed = bare_ddp.launcher_vs_bare([_job(rng, 0.066) for _ in range(2)],
                                        [_job(rng, 0.057), _job(rng, 0.066), _job(rng, 0.066)], 3)
    assert changed.interval.hi - changed.interval.lo > 2 * (steady.interval.hi - steady.interval.lo)
    assert changed.interval.lo < 0.95 < changed.interval.hi  # inconclusive, not a false fail


def test_run_bare_gives_the_job_a_temporary_folder_of_its_own_and_removes_it(tmp_path, monkeypatch):
    """torchrun without --log-dir leaves a torchelastic_* folder per job in the temporary folder; run_bare points
    TMPDIR at a folder of its own for the job and removes it (the command line stays torchrun's defaults)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    out = json.dumps({"bare_ddp": {"step_s": [[0.1, 0.1]], "losses": [1.0, 0.9], "threads": 1}})
    script = ("import json, os, tempfile; d = tempfile.mkdtemp(prefix='torchelastic_'); "
              f"assert os.path.dirname(d) != {str(temp)!r}, d; print({out!r})")
    monkeypatch.setattr(bare_ddp, "command", lambda cfg, nproc: [sys.executable, "-c", script])
    run = bare_ddp.run_bare(CFG, 1, timeout_s=60)
    assert run.losses == (1.0, 0.9)
    assert list(temp.iterdir()) == []


def _sleeping_job(monkeypatch, tmp_path):
    """The bare job replaced by a process that sleeps (its pid in a file), started the way run_bare starts it."""
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    monkeypatch.setattr(bare_ddp, "command", lambda cfg, nproc: [sys.executable, "-c", code])
    return pid_file


def _gone(pid_file, within_s=10.0):
    import os
    import time

    pid = int(pid_file.read_text())
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_hung_bare_job_is_killed_at_its_timeout(monkeypatch, tmp_path):
    pid_file = _sleeping_job(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match="timed out after 2 s and was killed"):
        bare_ddp.run_bare(CFG, 2, timeout_s=2)
    assert _gone(pid_file)


def test_sigterm_during_a_bare_job_kills_it_and_stays_an_interrupt(monkeypatch, tmp_path):
    """It had no SIGTERM handling (the job outlived a terminated pytest) and turned an interrupt into a
    RuntimeError, so pytest went on to the next job."""
    import os
    import signal
    import threading

    pid_file = _sleeping_job(monkeypatch, tmp_path)
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            bare_ddp.run_bare(CFG, 2, timeout_s=30)
    finally:
        timer.cancel()
    assert _gone(pid_file)


def test_a_bare_job_printing_bytes_that_are_not_utf8_fails_with_its_output(tmp_path, monkeypatch):
    """A rank printing non-UTF-8 bytes (a message in another locale) made the strict decode raise UnicodeDecodeError
    in place of the job's own output."""
    script = "import sys; sys.stderr.buffer.write(b'bad byte \\xff here\\n'); sys.exit(3)"
    monkeypatch.setattr(bare_ddp, "command", lambda cfg, nproc: [sys.executable, "-c", script])
    with pytest.raises(RuntimeError, match="exited 3") as info:
        bare_ddp.run_bare(CFG, 1, timeout_s=60)
    assert "bad byte \ufffd here" in str(info.value)
