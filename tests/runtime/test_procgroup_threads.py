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
