import pytest

torch = pytest.importorskip("torch")

from pytest_genai.dabench.memtrack import MemoryBudgetExceeded, make_tracker  # noqa: E402


def test_counts_each_storage_once_and_forgets_freed_ones():
    tracker = make_tracker()
    with tracker:
        a = torch.empty(1000)  # 4,000 B
        view = a[10:20]  # same storage
        a.add_(1.0)  # in place: same storage
        b = torch.empty(500, dtype=torch.float64)  # 4,000 B
        assert tracker.current_bytes == 8000
        del b
        torch.empty(1)  # any op lets the tracker notice the free
        assert tracker.current_bytes == 4000 + 4
    assert tracker.peak_bytes == 8000
    del view, a


def test_track_accounts_tensors_made_before():
    pre = torch.zeros(256)
    tracker = make_tracker()
    with tracker:
        tracker.track(pre)
        torch.zeros(256)
    assert tracker.peak_bytes == 2 * 1024


def test_budget_raises_like_an_allocation_failure():
    tracker = make_tracker(budget_bytes=10_000)
    with pytest.raises(MemoryBudgetExceeded, match="exceeds the budget of 10000 B"):
        with tracker:
            keep = [torch.empty(1000) for _ in range(3)]  # 12,000 B
            del keep
    assert tracker.exceeded


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="budget_bytes"):
        make_tracker(0)
