"""Diffusion on Gaudi without a Gaudi: lazy-mode mark_step placement and the HCCL DDP setup, with fake Habana
modules in sys.modules and an ``hpu`` device that computes on the CPU."""
import sys
import types
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")

from pytest_genai.diffusion import DiffusionConfig  # noqa: E402
from pytest_genai.diffusion.train import make_trainer  # noqa: E402

TINY = DiffusionConfig(image_size=16, base_width=8, batch_size=2, steps=1, warmup_steps=1)


@dataclass(frozen=True)
class CpuBackedDevice:
    """A device of ``kind`` whose tensors live on the CPU (what make_trainer reads: kind, torch_device, synchronize)."""

    kind: str
    torch_device: object = torch.device("cpu")

    def synchronize(self) -> None:
        pass


class TinyDenoiser(torch.nn.Module):
    """Predicts the noise with one conv over (noisy, upsampled cond); each backward records 'backward'."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2 * TINY.channels, TINY.channels, 3, padding=1)
        self.conv.weight.register_hook(lambda grad: events.append("backward"))

    def forward(self, noisy, cond, t):
        cond = torch.nn.functional.interpolate(cond, size=noisy.shape[-2:])
        return self.conv(torch.cat([noisy, cond], dim=1))


@pytest.fixture
def events(monkeypatch):
    """Records backward, optimizer steps and mark_step calls, in order, through a fake habana_frameworks."""
    log: list[str] = []
    core = types.ModuleType("habana_frameworks.torch.core")
    core.mark_step = lambda *a, **k: log.append("mark_step")
    for name in ("habana_frameworks", "habana_frameworks.torch"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "habana_frameworks.torch.core", core)
    sys.modules["habana_frameworks.torch"].core = core
    sys.modules["habana_frameworks"].torch = sys.modules["habana_frameworks.torch"]

    class RecordingAdamW(torch.optim.AdamW):
        def step(self, *args, **kwargs):
            out = super().step(*args, **kwargs)
            log.append("opt.step")
            return out

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    return log


def test_an_hpu_step_marks_a_graph_break_after_backward_and_after_the_optimizer_step(events):
    trainer = make_trainer(TINY, CpuBackedDevice("hpu"), model=TinyDenoiser(events))  # runs step 0
    trainer.timed_step()  # step 1
    assert events == ["backward", "mark_step", "opt.step", "mark_step"] * 2


def test_a_cpu_step_never_calls_mark_step(events):
    trainer = make_trainer(TINY, CpuBackedDevice("cpu"), model=TinyDenoiser(events))
    trainer.timed_step()
    assert events == ["backward", "opt.step"] * 2


def test_a_cpu_step_does_not_import_habana(monkeypatch):
    """Only an HPU device imports habana_frameworks: with none importable, a CPU trainer still builds and steps."""
    monkeypatch.setitem(sys.modules, "habana_frameworks", None)  # any import of it raises ImportError
    trainer = make_trainer(TINY, CpuBackedDevice("cpu"), model=TinyDenoiser([]))
    trainer.timed_step()


# -- DDP over HCCL --------------------------------------------------------------------------------------------------
def test_worker_setup_on_hpu_starts_hccl_on_the_processes_one_hpu(monkeypatch):
    import torch.distributed as dist

    from pytest_genai.diffusion import worker

    started = []
    hccl = types.ModuleType("habana_frameworks.torch.distributed.hccl")
    for name in ("habana_frameworks", "habana_frameworks.torch", "habana_frameworks.torch.distributed"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "habana_frameworks.torch.distributed.hccl", hccl)
    sys.modules["habana_frameworks.torch.distributed"].hccl = hccl
    monkeypatch.setattr(dist, "init_process_group", lambda backend, *a, **k: started.append(backend))

    device = worker._setup("hpu", 3)  # local rank 3 of an 8-HPU node
    assert started == ["hccl"]
    assert (device.kind, device.index) == ("hpu", 0)  # a Gaudi process sees its one HPU as hpu:0
    assert worker.ddp_device_ids("hpu", 3) is None  # DDP without device_ids, as optimum-habana wraps it
    assert worker.ddp_device_ids("cuda", 3) == [3]
    assert worker.ddp_device_ids("cpu", 3) is None


def test_worker_setup_refuses_kinds_without_a_ddp_path():
    from pytest_genai.diffusion import worker

    with pytest.raises(ValueError, match="'wse' has no DDP path here; use one of cpu, cuda, hpu"):
        worker._setup("wse", 0)


def test_hpu_ranks_run_in_lazy_mode_and_cpu_ranks_on_one_thread():
    from pytest_genai.diffusion.ddp import rank_env

    assert rank_env("hpu") == {"PT_HPU_LAZY_MODE": "1"}
    assert rank_env("cpu") == {"OMP_NUM_THREADS": "1"}
    assert rank_env("cuda") == {}
