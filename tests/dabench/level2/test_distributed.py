"""Real torchrun + gloo jobs with 2 ranks (a few seconds each): equivalence in float64, the measuring path, errors."""
import pytest

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2.config import ParallelConfig
from pytest_genai.dabench.level2.run import run_parallel, summarize

pytestmark = pytest.mark.slow  # seconds a test (worker processes, timed loops, real models): .ci/run runs them with -m slow

W = DecoderConfig(layers=2, hidden=32, heads=2, seq_len=8, batch=4, mode="train")
CONFIGS = [ParallelConfig("dp", W), ParallelConfig("tp", W),
           ParallelConfig("pp", W, micro_batches=2, head_vocab=64)]


def test_parallel_runs_equal_one_rank(tmp_path):
    result = run_parallel(CONFIGS, tmp_path, task="check", timeout_s=120)
    assert result["world_size"] == 2
    for cfg, ranks in zip(CONFIGS, result["results"]):
        for r, errors in enumerate(ranks):
            for name, value in errors.items():
                if name != "comm_calls":
                    assert value < 1e-12, f"{cfg.strategy} rank {r}: {name} differs by {value:.3g}"
    tp, pp = result["results"][1], result["results"][2]
    assert [r["comm_calls"] for r in tp] == [4 * W.layers] * 2
    assert [r["comm_calls"] for r in pp] == [2 * 2] * 2  # 2 micro-batches: a send and a recv each


def test_measure_job_reports_every_rank(tmp_path):
    configs = [ParallelConfig(c.strategy, c.workload, micro_batches=c.micro_batches, head_vocab=c.head_vocab,
                              warmup=1, repeats=2) for c in CONFIGS]
    result = run_parallel(configs, tmp_path, timeout_s=120)
    for cfg, ranks in zip(configs, result["results"]):
        s = summarize(ranks, cfg)
        assert s.samples_per_s > 0 and s.baseline_samples_per_s > 0
        assert 0.0 <= s.comm_time_share <= 1.0
        assert len(ranks[0]["baseline_step_s"]) == 3
    pp = summarize(result["results"][2], configs[2])
    assert set(pp.partitions) == {"optimal", "naive"} and len(pp.layer_loads_s) == W.layers + 1
    for run in pp.partitions.values():  # every stage timed alone in every timed round
        assert len(run.alone_rounds) == 2 and all(len(r) == 2 and min(r) > 0 for r in run.alone_rounds)


def test_a_bad_job_fails_with_the_rank_logs(tmp_path):
    from pytest_genai.runtime.launcher import LaunchError

    four = ParallelConfig("dp", W, world_size=4)
    import json

    job = tmp_path / "job.json"
    job.write_text(json.dumps({"task": "measure", "configs": [four.to_json()]}))
    from pytest_genai.runtime.launcher import LaunchSpec, launch

    with pytest.raises(LaunchError, match="world_size=4, torchrun started 2 ranks") as info:
        launch(["-m", "pytest_genai.dabench.level2.worker", str(job)], LaunchSpec(nproc=2, timeout_s=120), tmp_path)
    assert not info.value.timed_out
