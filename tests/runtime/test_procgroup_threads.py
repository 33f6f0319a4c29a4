"""One backend per device kind; torch's thread count is restored after a pinned region."""
import pytest

from pytest_genai.runtime.procgroup import backend_for
from pytest_genai.runtime.threads import available_cores


def test_one_backend_per_device_kind():
    assert [backend_for(k) for k in ("cpu", "cuda", "hpu")] == ["gloo", "nccl", "hccl"]
    with pytest.raises(ValueError, match="device kind 'ipu' has no process-group backend"):
        backend_for("ipu")


def test_torch_threads_restores_the_previous_count():
    torch = pytest.importorskip("torch")
    from pytest_genai.runtime.threads import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    assert available_cores() >= 1


@pytest.mark.parametrize(("cores", "local_world", "expected"), [(64, 8, 8), (2, 2, 1), (1, 2, 1), (7, 2, 3)])
def test_rank_threads_share_the_allocation_not_the_node(monkeypatch, cores, local_world, expected):
    """Under Slurm / taskset / a cpuset the process may use fewer cores than the node has: ranks took
    ``os.cpu_count() // local_world`` threads (28 each for 8 ranks in a 64-core allocation of a 224-core node)."""
    from pytest_genai.runtime import threads

    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 224)
    assert threads.rank_threads(local_world) == expected


def test_the_worker_and_the_bare_script_use_the_same_rank_thread_rule():
    import inspect

    from pytest_genai.train import bare_ddp, worker

    for module in (bare_ddp, worker):
        source = inspect.getsource(module)
        assert "rank_threads(" in source and "cpu_count()" not in source, module.__name__
