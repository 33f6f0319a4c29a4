"""The CPU live-tensor-bytes tracker counts what torch allocates and frees."""
import pytest


def test_counts_allocations_frees_and_views():
    import torch

    from pytest_genai.train.memtrack import live_tensor_bytes

    tracker = live_tensor_bytes()
    with tracker:
        a = torch.ones(1000)           # 4000 B
        b = a.view(10, 100)            # a view: same storage, not counted again
        c = torch.zeros(500)           # 2000 B
        assert tracker.current == 6000
        del a, b
        d = c + 1                      # the free of `a` is seen at the next operator
        assert tracker.current == 4000
    assert tracker.peak == 6000
    del c, d


def test_tracks_a_training_step_to_the_planner():
    """One model, two steps, one process: the peak equals the planner's forward-phase bytes within 3%."""
    import torch

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.train.memtrack import live_tensor_bytes
    from pytest_genai.train.planner import Workload, estimate
    from pytest_genai.train.strategies import _optimizer

    arch = get_arch("llama-3.1-8b", "tiny")
    tracker = live_tensor_bytes()
    with tracker:
        model = build_model(arch, "sdpa")
        opt = _optimizer(model.parameters(), 1e-3)
        for step in range(2):
            ids = torch.randint(0, arch.vocab, (2, 64), generator=torch.Generator().manual_seed(step))
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    # one process holds its gradients only during backward: that is the planner's FSDP phase model at world 1
    predicted = estimate(Workload(arch, world=1, micro_batch=2, seq_len=64, precision="fp32"), "fsdp").total
    assert tracker.peak == pytest.approx(predicted, rel=0.03)
