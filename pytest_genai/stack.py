"""The software stack a run used (``machine_info.genai.stack``): environment, never part of a benchmark's key.

Recorded once per session, when pytest-benchmark asks for its machine info (that is, after the benchmarks ran, so
nothing here runs before workers are forked), and only then is torch imported — and only if it is installed.
Nothing here allocates a tensor or creates a CUDA context: the CUDA, cuDNN and NCCL versions are read from torch's
build and libraries (NCCL only where the session's probe found CUDA devices), the driver, clocks, power limit and
ECC mode from NVML (``nvidia-ml-py``, optional; NVML does not touch CUDA), the Gaudi stack from the installed distributions and
``hl-smi --version`` (with a short timeout). A package that is not installed is recorded as ``None``; a lookup that
fails is recorded as ``None`` too, never an error.

Every lookup is a parameter of :func:`collect_stack`, so tests pass fakes instead of hardware.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import shutil
import subprocess
from typing import Any, Callable, Mapping

PACKAGES = (
    "torch", "transformers", "datasets", "deepspeed", "neural-compressor", "neural-compressor-pt", "torchao", "lm-eval",
    "habana-torch-plugin", "optimum-habana", "pytest", "pytest-benchmark", "pytest-genai",
)
"""Distributions whose versions are recorded (``None`` when not installed)."""

HL_SMI_TIMEOUT_S = 5.0


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # a broken installation's metadata: absent as far as the record goes
        return None


def _call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def torch_stack(torch: Any, cuda_available: bool) -> dict[str, Any]:
    """CUDA, cuDNN, NCCL and HIP versions as torch reports them (None where absent). NCCL is read only when CUDA
    devices were found; ``torch.backends.cudnn.version()`` loads the library, it does not initialise CUDA."""
    version = getattr(torch, "version", None)
    nccl = _call(lambda: torch.cuda.nccl.version()) if cuda_available else None
    if isinstance(nccl, tuple):
        nccl = ".".join(map(str, nccl))
    return {
        "torch": str(getattr(torch, "__version__", None) or "") or None,
        "cuda": getattr(version, "cuda", None),
        "cudnn": _call(lambda: torch.backends.cudnn.version()),
        "nccl": nccl,
        "hip": getattr(version, "hip", None),
    }


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def nvml_stack(nvml: Any) -> dict[str, Any] | None:
    """Driver version and, per GPU, name, maximum and application SM/memory clocks (MHz), enforced power limit (W)
    and ECC mode, from an NVML binding (``pynvml``). None when NVML cannot start or sees no GPU."""
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # no driver, no GPU, or a binding without a library
        return None
    try:
        count = _call(nvml.nvmlDeviceGetCount) or 0
        if count <= 0:
            return None
        gpus: dict[str, Any] = {}
        for index in range(count):
            handle = _call(lambda: nvml.nvmlDeviceGetHandleByIndex(index))
            if handle is None:
                gpus[str(index)] = None
                continue
            sm, mem = getattr(nvml, "NVML_CLOCK_SM", 1), getattr(nvml, "NVML_CLOCK_MEM", 2)
            power_mw = _call(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
            ecc = _call(lambda: nvml.nvmlDeviceGetEccMode(handle))
            gpus[str(index)] = {
                "name": _text(_call(lambda: nvml.nvmlDeviceGetName(handle))),
                "sm_clock_max_mhz": _call(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, sm)),
                "mem_clock_max_mhz": _call(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, mem)),
                "sm_clock_app_mhz": _call(lambda: nvml.nvmlDeviceGetApplicationsClock(handle, sm)),
                "mem_clock_app_mhz": _call(lambda: nvml.nvmlDeviceGetApplicationsClock(handle, mem)),
                "power_limit_w": None if power_mw is None else power_mw / 1000.0,
                "ecc": None if not ecc else ("enabled" if ecc[0] else "disabled"),
            }
        return {"driver": _text(_call(nvml.nvmlSystemGetDriverVersion)), "gpus": gpus}
    finally:
        _call(nvml.nvmlShutdown)


def hl_smi_version(which: Callable[[str], str | None] = shutil.which,
                   run: Callable[..., Any] = subprocess.run, timeout_s: float = HL_SMI_TIMEOUT_S) -> str | None:
    """The first line ``hl-smi --version`` prints (Gaudi driver/firmware), or None: no binary, an error, or no
    answer within ``timeout_s`` seconds (it never hangs the session)."""
    path = which("hl-smi")
    if not path:
        return None
    try:
        done = run([path, "--version"], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in (done.stdout or "").splitlines() if line.strip()]
    return lines[0] if done.returncode == 0 and lines else None


def _import_torch() -> Any:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


def _import_nvml() -> Any:
    try:
        import pynvml  # nvidia-ml-py
    except Exception:
        return None
    return pynvml


def collect_stack(
    *,
    cuda_available: bool = False,
    version_of: Callable[[str], str | None] = installed_version,
    torch_module: Callable[[], Any] = _import_torch,
    nvml_module: Callable[[], Any] = _import_nvml,
    hl_smi: Callable[[], str | None] = hl_smi_version,
    python_version: Callable[[], str] = platform.python_version,
) -> dict[str, Any]:
    """The software stack, flat where it can be (``torch``, ``cuda``, ``transformers``, ...), so that two runs'
    stacks compare key by key. ``cuda_available``: the session's CUDA probe found devices (NCCL is read only then;
    NVML answers for itself: no GPU, no entries)."""
    stack: dict[str, Any] = {"python": python_version()}
    stack.update({name: version_of(name) for name in PACKAGES})
    torch = _call(torch_module)
    found = torch_stack(torch, cuda_available) if torch is not None else {}
    stack["torch"] = found.get("torch") or stack["torch"]  # the imported build's version (vendor builds differ)
    for key in ("cuda", "cudnn", "nccl", "hip"):
        stack[key] = found.get(key)
    nvml = nvml_stack(_call(nvml_module))
    stack["nvidia_driver"] = nvml["driver"] if nvml else None
    stack["gpus"] = nvml["gpus"] if nvml else {}
    stack["hl_smi"] = _call(hl_smi)
    return stack


def stack_differences(baseline: Mapping[str, Any] | None, current: Mapping[str, Any] | None) -> list[str]:
    """One line per stack item that differs (``torch 2.5.1 -> 2.6.0``, ``gpus.0.power_limit_w 700 -> 500``); a
    run written before the stack was recorded gives one line saying so (when the other has one)."""
    from pytest_genai.identity import differences

    if not baseline and not current:
        return []
    if not baseline or not current:
        which = "baseline" if not baseline else "current"
        return [f"the {which} run has no software stack recorded (written before pytest-genai recorded it)"]
    def named(stack: Mapping[str, Any]) -> dict[str, Any]:
        return {k: ("not installed" if v is None and k in PACKAGES else v) for k, v in stack.items()}

    return differences(named(baseline), named(current))
