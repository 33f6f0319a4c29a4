"""The CPU live-tensor-bytes tracker counts what torch allocates and frees; a budget acts as the memory limit."""
import pytest


def test_counts_allocations_frees_and_views():
    import torch

    from pytest_genai.runtime.memtrack import make_tracker

    tracker = make_tracker()
    with tracker:
        a = torch.ones(1000)           # 4000 B
        b = a.view(10, 100)            # a view: same storage, not counted again
        c = torch.zeros(500)           # 2000 B
        assert tracker.current_bytes == 6000
        del a, b
        d = c + 1                      # the free of `a` is seen at the next operator
        assert tracker.current_bytes == 4000
    assert tracker.peak_bytes == 6000
    assert not tracker.live  # left: no storage stays weakly referenced (they slowed later steps down)
    del c, d


def test_tracks_a_training_step_to_the_planner():
    """One model, two steps, one process: the peak equals the planner's forward-phase bytes within 3%."""
    import torch

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.runtime.memtrack import make_tracker
    from pytest_genai.train.planner import Workload, estimate
    from pytest_genai.train.strategies import _optimizer

    arch = get_arch("llama-3.1-8b", "tiny")
    tracker = make_tracker()
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
    assert tracker.peak_bytes == pytest.approx(predicted, rel=0.03)


def test_counts_each_storage_once_and_forgets_freed_ones():
    import torch

    from pytest_genai.runtime.memtrack import make_tracker

    tracker = make_tracker()
    with tracker:
        a = torch.empty(1000)  # 4,000 B
        view = a[10:20]  # same storage
        a.add_(1.0)  # in place: same storage
        b = torch.empty(500, dtype=torch.float64)  # 4,000 B
        assert tracker.current_bytes == 8000
        del b
        c = torch.empty(1)  # may reuse b's address: counted anew all the same
        assert tracker.current_bytes == 4000 + 4
        del c
        assert tracker.current_bytes == 4000  # reading it notices the frees
    assert tracker.peak_bytes == 8000
    del view, a


def test_track_accounts_tensors_made_before():
    import torch

    from pytest_genai.runtime.memtrack import make_tracker

    pre = torch.zeros(256)
    tracker = make_tracker()
    with tracker:
        tracker.track(pre)
        torch.zeros(256)
    assert tracker.peak_bytes == 2 * 1024


def test_budget_raises_like_an_allocation_failure():
    import torch

    from pytest_genai.runtime.memtrack import MemoryBudgetExceeded, make_tracker

    tracker = make_tracker(budget_bytes=10_000)
    with pytest.raises(MemoryBudgetExceeded, match="exceeds the budget of 10000 B"):
        with tracker:
            keep = [torch.empty(1000) for _ in range(3)]  # 12,000 B
            del keep
    assert tracker.exceeded


def test_budget_must_be_positive():
    from pytest_genai.runtime.memtrack import make_tracker

    with pytest.raises(ValueError, match="budget_bytes"):
        make_tracker(0)


def test_a_freed_address_reused_before_a_sweep_is_counted_and_the_peak_stays_exact():
    """Between sweeps the tracker holds freed storages; a new storage at a freed one's address replaces it, and a
    run of short-lived temporaries never raises the peak above the largest live set."""
    import torch

    from pytest_genai.runtime.memtrack import make_tracker

    tracker = make_tracker()
    with tracker:
        keep = torch.empty(250)  # 1,000 B
        for _ in range(200):
            torch.empty(1000).add_(1.0)  # 4,000 B, freed at once (the allocator tends to hand back the same address)
        assert tracker.peak_bytes == 1000 + 4000
        big = torch.empty(2000)  # 8,000 B
        assert tracker.peak_bytes == 1000 + 8000
        assert tracker.current_bytes == 1000 + 8000
    del keep, big


def test_a_storage_freed_and_reallocated_in_place_is_counted_once_at_its_size():
    """FSDP2 frees and regrows its all-gather buffers with untyped_storage().resize_(0) / resize_(n), which no
    operator returns: keyed by address, each regrown buffer was counted again and the freed one never dropped (the
    FSDP fine-tuning peaks read 15-25% high)."""
    import torch

    from pytest_genai.runtime.memtrack import make_tracker

    size = 4 << 20
    tracker = make_tracker()
    with tracker:
        t = torch.zeros(size // 4)
        s = t.untyped_storage()
        for _ in range(3):
            s.resize_(0)
            s.resize_(size)
            t.add_(1)
        assert tracker.current_bytes == size and tracker.peak_bytes == size
        s.resize_(0)
        assert tracker.current_bytes == 0
