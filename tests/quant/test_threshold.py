"""The global threshold tau: exact k-th smallest |w| over many tensors, never concatenated."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import threshold as T
from pytest_genai.quant.metrics import threshold_rank


def _reference(ws, sparsity):
    allabs = torch.cat([w.reshape(-1).abs() for w in ws])
    k = threshold_rank(sparsity, allabs.numel())
    return float(torch.kthvalue(allabs, k).values), k, allabs


@st.composite
def tensor_lists(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    shapes = draw(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=5))
    ties = draw(st.booleans())
    out = []
    for s in shapes:
        w = torch.randn(s, generator=g) * draw(st.floats(1e-3, 10))
        if ties:  # coarse values: many equal magnitudes, zeros included
            w = torch.round(w * 2) / 2
        out.append(w)
    return out


@settings(max_examples=25, deadline=None)
@given(ws=tensor_lists(), sparsity=st.floats(0.01, 0.99), sample=st.sampled_from([16, 64, 1 << 20]))
def test_exact_threshold_equals_kthvalue_of_the_concatenation(ws, sparsity, sample):
    ref, k, allabs = _reference(ws, sparsity)
    res = T.global_threshold(ws, sparsity, exact=True, sample_size=sample)
    assert res.tau == ref and res.k == k
    assert res.rank == int((allabs <= ref).sum())  # rank of tau: within ties of k
    assert res.n_above == [int((w.abs() > ref).sum()) for w in ws]
    # sums are fp32 within a 2**18-element chunk, fp64 across chunks (see threshold._scan)
    assert res.sum_abs == pytest.approx([float(w.abs().double().sum()) for w in ws], rel=1e-5)


@settings(max_examples=25, deadline=None)
@given(ws=tensor_lists(), sparsity=st.floats(0.01, 0.99))
def test_sampled_threshold_reports_its_true_rank(ws, sparsity):
    res = T.global_threshold(ws, sparsity, exact=False, sample_size=64)
    allabs = torch.cat([w.reshape(-1).abs() for w in ws])
    assert res.exact is False
    assert res.rank == int((allabs <= res.tau).sum())
    assert res.n_above == [int((w.abs() > res.tau).sum()) for w in ws]


def test_bracket_miss_falls_back_to_counting_bisection(monkeypatch):
    g = torch.Generator().manual_seed(0)
    ws = [torch.randn(50, 30, generator=g), torch.randn(7, 100, generator=g)]
    ref, k, _ = _reference(ws, 0.3)
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (10.0, 20.0))  # far above rank k
    monkeypatch.setattr(T, "_MAX_CANDIDATES", 8)
    assert T.global_threshold(ws, 0.3).tau == ref
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (0.0, 1e-6))  # below rank k
    assert T.global_threshold(ws, 0.3).tau == ref


def test_run_of_ties_at_rank_k_narrows_to_that_value(monkeypatch):
    ws = [torch.ones(20, 20), torch.full((10, 10), 3.0)]
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (5.0, 9.0))
    monkeypatch.setattr(T, "_MAX_CANDIDATES", 4)
    res = T.global_threshold(ws, 0.5)
    assert res.tau == 1.0 and res.rank == 400 and res.n_above == [0, 100]


def test_bf16_weights_compare_exactly():
    g = torch.Generator().manual_seed(3)
    ws = [torch.randn(33, 17, generator=g).to(torch.bfloat16)]
    ref, _, _ = _reference([w.float() for w in ws], 0.3)
    assert T.global_threshold(ws, 0.3).tau == ref


def test_empty_input_rejected():
    with pytest.raises(ValueError, match="at least one non-empty"):
        T.global_threshold([], 0.3)
    with pytest.raises(ValueError, match="sparsity=1.2"):
        T.global_threshold([torch.ones(2, 2)], 1.2)
