"""Worker helpers and the job summary, without launching anything."""
import pytest

from pytest_genai.train.config import ThroughputConfig
from pytest_genai.train.run import summarize
from pytest_genai.train.job import synthetic_batch
from pytest_genai.train.worker import attention_setup


def test_synthetic_batches_are_deterministic_and_differ_by_rank_and_step():
    a = synthetic_batch(0, 3, 1, 2, 16, 100)
    assert a.shape == (2, 16) and int(a.max()) < 100
    assert (a == synthetic_batch(0, 3, 1, 2, 16, 100)).all()
    assert not (a == synthetic_batch(0, 3, 0, 2, 16, 100)).all()
    assert not (a == synthetic_batch(0, 4, 1, 2, 16, 100)).all()


def test_attention_setup_labels_what_really_runs():
    assert attention_setup("cuda", "fused", True, "amp") == ("sdpa", "flash", "sdpa-flash")
    assert attention_setup("cuda", "fused", True, "fp32") == ("sdpa", "efficient", "sdpa-mem-efficient")
    assert attention_setup("cuda", "unfused", True) == ("sdpa", "math", "sdpa-math")
    impl, backend, label = attention_setup("cpu", "fused", True)
    assert (impl, backend) == ("sdpa", None) and "not flash attention" in label
    assert attention_setup("cpu", "unfused", True) == ("eager", None, "eager")
    assert attention_setup("cuda", "unfused", False) == ("eager", None, "eager")
    with pytest.raises(ValueError, match="no SDPA path"):
        attention_setup("cpu", "fused", False)


def _result(step_s, peaks, losses):
    return {"world_size": len(step_s), "losses": losses,
            "ranks": [{"step_s": s, "peak_memory_bytes": p, "memory_measure": "live_tensor_bytes",
                       "attention_impl": "eager", "params": 10} for s, p in zip(step_s, peaks)]}


def test_summary_takes_the_slowest_rank_then_the_median():
    cfg = ThroughputConfig(model="llama-3.1-8b", micro_batch=2, seq_len=128, steps=5, warmup=2)
    result = _result([[9, 9, 1.0, 2.0, 4.0], [9, 9, 1.5, 1.0, 3.0]], [100, 120], [7.0, 6.9, 6.8, 6.7, 6.6])
    s = summarize(result, cfg, warmup=2, wall_s=12.0)
    assert s.step_s == (9, 9, 1.5, 2.0, 4.0)
    assert s.median_step_s == 2.0 and s.global_batch == 4
    assert s.tokens_per_s == 4 * 128 / 2.0 and s.samples_per_s == 2.0
    assert s.max_peak_memory_bytes == 120 and s.peak_memory_bytes == (100, 120)
    assert s.extra["params"] == 10


def test_summary_rejects_missing_ranks():
    cfg = ThroughputConfig(model="llama-3.1-8b", steps=3, warmup=2)
    bad = _result([[1.0, 1.0, 1.0]], [1], [1.0, 1.0, 1.0])
    bad["world_size"] = 2
    with pytest.raises(ValueError, match="rank entries"):
        summarize(bad, cfg, warmup=2)
