"""Before ranks start, the pytest process gives back the CUDA memory its allocator caches (rank 0 runs on GPU 0).
Fast, so outside test_launcher.py's slow set."""
import sys
import types

import pytest

from pytest_genai.runtime import launcher


def _fake_torch(initialized):
    calls = []
    cuda = types.SimpleNamespace(is_initialized=lambda: initialized, empty_cache=lambda: calls.append("empty_cache"))
    return types.SimpleNamespace(cuda=cuda), calls


@pytest.mark.parametrize("initialized", [True, False])
def test_cached_cuda_memory_is_released_only_where_cuda_was_used(monkeypatch, initialized):
    torch, calls = _fake_torch(initialized)
    monkeypatch.setitem(sys.modules, "torch", torch)
    launcher.release_cached_device_memory()
    assert calls == (["empty_cache"] if initialized else [])


def test_a_launch_releases_the_cache_before_the_ranks_start(monkeypatch, tmp_path):
    """The release happens inside launch(), before torchrun: stopped at the command's construction here."""
    torch, calls = _fake_torch(True)
    monkeypatch.setitem(sys.modules, "torch", torch)

    def stop(*args, **kwargs):
        raise RuntimeError(f"stopped after {calls}")

    monkeypatch.setattr(launcher, "torchrun_command", stop)
    with pytest.raises(RuntimeError, match=r"stopped after \['empty_cache'\]"):
        launcher.launch(["-m", "json.tool"], launcher.LaunchSpec(nproc=1), tmp_path)
