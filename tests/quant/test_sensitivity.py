"""Phase 1: one global threshold, per-unit scores, scale invariance, exclusions."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import PlanConfig, SensitivityConfig, analyze_sensitivity, make_plan, prune_
from pytest_genai.quant.metrics import threshold_rank

from .conftest import tiny_llama


def _eligible_weights(model):
    return {n: m.weight.detach() for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"}


def _scale_eligible_(model, c):
    with torch.no_grad():
        for w in _eligible_weights(model).values():
            w.mul_(c)


def test_global_threshold_and_fraction_scores_match_a_direct_computation(llama):
    res = analyze_sensitivity(llama, SensitivityConfig(sparsity=0.3))
    ws = _eligible_weights(llama)
    allabs = torch.cat([w.reshape(-1).abs() for w in ws.values()])
    k = threshold_rank(0.3, allabs.numel())
    tau = float(torch.kthvalue(allabs, k).values)
    assert res.threshold == tau and res.target_rank == k and res.eligible_params == allabs.numel()
    assert res.definition == "fraction_above_global_threshold"
    for name, w in ws.items():
        assert res.scores[name] == pytest.approx(float((w.abs() > tau).float().mean()), abs=0)
    # roughly 30% of all weights lie at or below tau
    assert res.threshold_rank == k


def test_block_granularity_pools_the_block(llama):
    res = analyze_sensitivity(llama, SensitivityConfig(granularity="block", definition="mean_abs_over_threshold"))
    assert set(res.scores) == {"model.layers.0", "model.layers.1"}
    ws = {n: w for n, w in _eligible_weights(llama).items() if n.startswith("model.layers.1.")}
    pooled = torch.cat([w.reshape(-1).abs().double() for w in ws.values()])
    # sums are fp32 within a chunk, fp64 across chunks (threshold._scan)
    assert res.scores["model.layers.1"] == pytest.approx(float(pooled.mean()) / res.threshold, rel=1e-5)
    assert res.units["model.layers.1"] == tuple(ws)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), e=st.integers(-8, 8), definition=st.sampled_from(
    ["fraction_above_global_threshold", "mean_abs_over_threshold"]), granularity=st.sampled_from(["module", "block"]))
def test_scaling_every_weight_keeps_rank_scores_and_plan(seed, e, definition, granularity):
    cfg = SensitivityConfig(definition=definition, granularity=granularity)
    model = tiny_llama(seed)
    before = analyze_sensitivity(model, cfg)
    _scale_eligible_(model, 2.0 ** e)  # powers of two scale exactly, so no new ties can appear
    after = analyze_sensitivity(model, cfg)
    assert after.threshold == before.threshold * 2.0 ** e
    assert after.threshold_rank == before.threshold_rank
    assert after.scores == before.scores
    assert make_plan(after, PlanConfig()).formats == make_plan(before, PlanConfig()).formats


@pytest.mark.parametrize("c", [0.37, 3.1, 1e-3])
def test_scaling_by_other_constants_keeps_rank_and_scores(c):
    model = tiny_llama(5)
    before = analyze_sensitivity(model)
    _scale_eligible_(model, c)
    after = analyze_sensitivity(model)
    assert after.threshold == pytest.approx(before.threshold * c, rel=1e-6)
    assert after.threshold_rank == before.threshold_rank and after.scores == before.scores


def test_exclusions_reported_and_never_scored(llama_factory):
    model = llama_factory(bias=True)
    res = analyze_sensitivity(model)
    assert not any(n.endswith("bias") or "norm" in n for n in res.module_shapes)
    summary = res.excluded_summary()
    assert summary["bias"] == 2 * 7 and summary["normalization"] == 2 * 2 + 1
    assert summary["embedding"] == 1 and summary["lm_head"] == 1
    d = res.to_dict()
    assert d["sensitivity"] == "fraction_above_global_threshold" and d["excluded"] == summary


def test_including_embeddings_and_head_changes_the_global_threshold(llama):
    base = analyze_sensitivity(llama)
    wide = analyze_sensitivity(llama, SensitivityConfig(include_embeddings=True, include_lm_head=True))
    assert wide.eligible_params == base.eligible_params + 2 * 128 * 64
    assert {"model.embed_tokens", "lm_head"} <= set(wide.scores)


def test_sampled_threshold_close_to_exact(llama):
    exact = analyze_sensitivity(llama)
    approx = analyze_sensitivity(llama, SensitivityConfig(exact=False, sample_size=4096))
    assert not approx.exact
    assert abs(approx.threshold_rank - exact.target_rank) < 0.02 * exact.eligible_params


def test_other_bytes_cover_the_rest_of_the_state(llama):
    res = analyze_sensitivity(llama)
    total = sum(t.numel() * 4 for t in llama.state_dict().values())
    assert res.other_bytes + 4 * res.eligible_params == total
    assert res.other_fp32_bytes == res.other_bytes  # fp32 model


def test_prune_zeroes_the_threshold_share_and_claims_no_saving(llama):
    res = analyze_sensitivity(llama)
    out = prune_(llama, res)
    assert out["pruned_params"] == res.threshold_rank
    assert out["pruned_fraction"] == pytest.approx(0.3, abs=1e-4)
    assert out["sparse_storage"] is False
    assert float(llama.model.norm.weight.detach().min()) == 1.0  # norms untouched
