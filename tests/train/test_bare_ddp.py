"""The bare torchrun DDP script's pure parts (issue 17): its command, its output, the comparison; nothing launched
(benchmarks/test_finetune.py::test_launcher_vs_bare_cpu runs it)."""
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
    c = bare_ddp.launcher_vs_bare(suite, bare, bare, warmup=2)
    assert c.suite_step_s == statistics.median(suite[2:]) == 0.11
    assert c.bare_step_s == (0.10, 0.10)
    assert c.ratio == pytest.approx(0.10 / 0.11)
    assert c.interval.lo <= c.ratio <= c.interval.hi and c.interval.n == 5
    assert bare_ddp.launcher_vs_bare(suite, bare, bare, warmup=2) == c  # seeded bootstrap: reproducible
    with pytest.raises(ValueError, match="no timed steps"):
        bare_ddp.launcher_vs_bare(suite[:2], bare, bare, warmup=2)


def test_a_load_change_between_the_bare_runs_widens_the_interval_over_both():
    suite = [1.0] * 2 + [0.10, 0.11, 0.10, 0.11, 0.10, 0.11]
    faster, slower = [1.0] * 2 + [0.08, 0.09] * 3, [1.0] * 2 + [0.12, 0.13] * 3
    alone = bare_ddp.launcher_vs_bare(suite, faster, faster, warmup=2)
    both = bare_ddp.launcher_vs_bare(suite, faster, slower, warmup=2)
    assert alone.interval.hi < 0.95  # the faster bare run alone would call the suite slow ...
    assert both.interval.lo < 0.95 < both.interval.hi  # ... the slower one after it says the machine changed
    assert both.bare_step_s == pytest.approx((0.085, 0.125)) and both.ratio == pytest.approx(0.105 / 0.105)
