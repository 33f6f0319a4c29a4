"""The software stack in machine_info.genai.stack: pure collection with injected lookups (no hardware needed)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pytest_genai.stack import PACKAGES, collect_stack, hl_smi_version, nvml_stack, stack_differences, torch_stack


def fake_torch(cuda: str | None = "12.4", hip: str | None = None) -> types.SimpleNamespace:
    nccl = types.SimpleNamespace(version=lambda: (2, 21, 5))
    return types.SimpleNamespace(
        __version__="2.5.1+cu124", version=types.SimpleNamespace(cuda=cuda, hip=hip),
        backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100)),
        cuda=types.SimpleNamespace(nccl=nccl))


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self, count: int = 2, fail_init: bool = False) -> None:
        self.count, self.fail_init, self.shutdown = count, fail_init, False

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:
        self.shutdown = True

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"

    def nvmlDeviceGetName(self, h: int) -> str:
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return 1980 if kind == 1 else 2619

    def nvmlDeviceGetApplicationsClock(self, h: int, kind: int) -> int:
        raise RuntimeError("Not Supported")  # a lookup the device does not support: None, not an error

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return 700000 if h == 0 else 500000

    def nvmlDeviceGetEccMode(self, h: int) -> tuple[int, int]:
        return (1, 1)


def versions(**given: str | None):
    return lambda name: given.get(name)


def test_every_package_is_recorded_absent_ones_as_none() -> None:
    stack = collect_stack(version_of=versions(transformers="4.46.0"), torch_module=lambda: None,
                          nvml_module=lambda: None, hl_smi=lambda: None, python_version=lambda: "3.11.7")
    assert set(PACKAGES) <= set(stack)
    assert stack["python"] == "3.11.7" and stack["transformers"] == "4.46.0"
    assert stack["deepspeed"] is None and stack["torch"] is None and stack["optimum-habana"] is None
    assert stack["cuda"] is None and stack["nccl"] is None and stack["nvidia_driver"] is None and stack["gpus"] == {}


def test_cuda_stack_from_torch_and_nvml() -> None:
    nvml = FakeNvml()
    stack = collect_stack(cuda_available=True, version_of=versions(torch="2.5.1"), torch_module=fake_torch,
                          nvml_module=lambda: nvml, hl_smi=lambda: None)
    assert stack["torch"] == "2.5.1+cu124"  # the imported build, not the distribution's metadata
    assert (stack["cuda"], stack["cudnn"], stack["nccl"], stack["hip"]) == ("12.4", 90100, "2.21.5", None)
    assert stack["nvidia_driver"] == "550.54.15"
    gpu0 = stack["gpus"]["0"]
    assert gpu0["name"] == "NVIDIA H100 80GB HBM3" and gpu0["sm_clock_max_mhz"] == 1980
    assert gpu0["mem_clock_max_mhz"] == 2619 and gpu0["sm_clock_app_mhz"] is None
    assert gpu0["power_limit_w"] == 700.0 and gpu0["ecc"] == "enabled"
    assert stack["gpus"]["1"]["power_limit_w"] == 500.0
    assert nvml.shutdown


def test_nccl_is_not_read_without_cuda_devices() -> None:
    def no_nccl():
        raise AssertionError("NCCL read on a machine whose probe found no CUDA device")

    torch = fake_torch(cuda=None)
    torch.cuda.nccl.version = no_nccl
    assert torch_stack(torch, cuda_available=False)["nccl"] is None


def test_nvml_that_cannot_start_or_sees_no_gpu_is_none() -> None:
    assert nvml_stack(FakeNvml(fail_init=True)) is None
    assert nvml_stack(FakeNvml(count=0)) is None
    assert nvml_stack(None) is None


def test_hl_smi_version_first_line_missing_binary_and_timeout() -> None:
    def ran(out: str, rc: int = 0):
        return lambda *a, **kw: subprocess.CompletedProcess(a[0], rc, stdout=out, stderr="")

    which = lambda name: "/usr/bin/hl-smi"  # noqa: E731
    assert hl_smi_version(which, ran("\nhl-smi version hl-1.18.0-fw-53.1.1.1 (Oct 10 2024)\n")) == \
        "hl-smi version hl-1.18.0-fw-53.1.1.1 (Oct 10 2024)"
    assert hl_smi_version(lambda name: None, ran("never called")) is None
    assert hl_smi_version(which, ran("", rc=1)) is None

    def hangs(*a, **kw):
        assert kw["timeout"] <= 10
        raise subprocess.TimeoutExpired(a[0], kw["timeout"])

    assert hl_smi_version(which, hangs) is None


def test_stack_differences_name_what_changed() -> None:
    base = {"python": "3.11.7", "torch": "2.5.1", "cuda": "12.4", "gpus": {"0": {"power_limit_w": 700.0}}}
    cur = {"python": "3.11.7", "torch": "2.6.0", "cuda": "12.4", "gpus": {"0": {"power_limit_w": 500.0}}}
    assert stack_differences(base, cur) == ["torch 2.5.1 -> 2.6.0", "gpus.0.power_limit_w 700 -> 500"]
    assert stack_differences(base, dict(base)) == []
    assert stack_differences({}, {}) == []
    assert stack_differences({}, cur) == ["the baseline run has no software stack recorded (written before "
                                          "pytest-genai recorded it)"]


def test_the_real_collection_runs_here_without_cuda() -> None:
    stack = collect_stack()
    assert stack["python"] == ".".join(map(str, sys.version_info[:3]))
    assert stack["pytest-genai"] is not None and stack["pytest-benchmark"] is not None


LOCK = Path(__file__).resolve().parents[1] / "ci" / "constraints.txt"


def _lock_pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a pip constraints file, by normalized name (PEP 503)."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if (found := re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)):
            pins[re.sub(r"[-_.]+", "-", found[1]).lower()] = found[2]
    return pins


def test_the_ci_lock_pins_every_recorded_package_that_ci_installs() -> None:
    """The lock (ci/constraints.txt, what .ci/run installs with -c) covers the stack's packages that `.[ci]` brings,
    with torch pinned as .ci/run installs it."""
    pins = _lock_pins(LOCK)
    not_ci = {"neural-compressor", "habana-torch-plugin", "optimum-habana", "pytest-genai"}  # other extras, or this
    assert {name for name in PACKAGES if name not in not_ci} - set(pins) == set()
    assert pins["torch"] == "2.13.0"


BENCH = "def test_a(benchmark):\n    benchmark(lambda: None)\n"


@pytest.mark.skipif(not os.environ.get("GENAI_CI_LOCK"),
                    reason="not a locked install: .ci/run sets GENAI_CI_LOCK after installing from ci/constraints.txt")
def test_machine_info_records_the_locked_set(pytester: pytest.Pytester) -> None:
    """In CI, a run's machine_info.genai.stack shows the versions the lock pins (torch's local build label aside:
    ``==2.13.0`` matches ``2.13.0+cpu``, as for pip)."""
    from packaging.specifiers import SpecifierSet

    pins = _lock_pins(Path(os.environ["GENAI_CI_LOCK"]))
    pytester.makepyfile(BENCH)
    # a --genai-* option: a plain pytest-benchmark session is none of the plugin's business (it stays silent)
    pytester.runpytest("--benchmark-json", "out.json", "-p", "no:cacheprovider", "--genai-scale", "tiny"
                       ).assert_outcomes(passed=1)
    stack = json.loads((pytester.path / "out.json").read_text())["machine_info"]["genai"]["stack"]
    locked = {name: stack[name] for name in PACKAGES if name in pins}
    assert len(locked) >= 8, locked
    wrong = {name: (version, pins[name]) for name, version in locked.items()
             if version is None or version not in SpecifierSet(f"=={pins[name]}")}
    assert wrong == {}, f"recorded (installed, locked) differ: {wrong}"
