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


def test_the_memory_efficient_kernel_gets_expanded_key_value_heads(monkeypatch):
    """The first H200 run: Llama 3.1's grouped-query attention reached SDPA as enable_gqa=True with one key/value
    head, which the memory-efficient kernel (the fp32 'fused' row) cannot run ("No available kernel"). Under the
    worker's efficient context transformers must hand over as many key/value heads as query heads."""
    torch = pytest.importorskip("torch")
    from torch.nn import functional as F

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.train.worker import sdpa_context

    seen = []

    def spy(q, k, v, *args, **kwargs):
        seen.append((q.shape[1], k.shape[1], bool(kwargs.get("enable_gqa", False))))
        return torch.zeros_like(q)

    arch = get_arch("llama-3.1-8b", "tiny")
    model = build_model(arch, "sdpa")
    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    assert arch.num_kv_heads < arch.num_heads
    with sdpa_context("efficient"):
        model(input_ids=torch.zeros((1, 8), dtype=torch.long))
    assert len(seen) == arch.num_layers
    assert all(s == (arch.num_heads, arch.num_heads, False) for s in seen), seen
