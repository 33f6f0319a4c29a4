"""Probes that find each kind of device. SDKs are imported here, lazily, and only where present.

A probe returns a :class:`ProbeResult`. A missing SDK is a clean absence (the kind's tests skip with how to enable
it). A probe that raises, or returns something other than a ProbeResult for its kind, makes the kind **broken**: the
session goes on, but the kind's tests error with the exception (:func:`broken_message`) instead of skipping, so a run
selected with ``-m hpu`` on a node whose driver fails does not go green having run nothing.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
from typing import Callable

from pytest_genai.devices.device import ENABLE_HINTS, KINDS, Device


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    kind: str
    devices: tuple[Device, ...] = ()
    reason: str | None = None  # why none were found (None when found)
    error: str | None = None  # the probe's own failure, "<ExceptionType>: <message>": the kind is broken, not absent

    def __post_init__(self) -> None:
        if self.error is not None and self.devices:
            raise ValueError(f"ProbeResult({self.kind!r}) has devices and an error; a broken probe found nothing")

    @property
    def available(self) -> bool:
        return bool(self.devices)

    @property
    def broken(self) -> bool:
        """The probe failed (raised, or returned a wrong object): an installed SDK that does not work."""
        return self.error is not None


class DeviceBroken(LookupError):
    """A device kind whose probe failed; its message is :func:`broken_message`."""


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def cuda_generation(name: str, total_memory_bytes: int | None = None) -> str:
    """Map a CUDA device name (``torch.cuda.get_device_name``) to a spec generation slug."""
    upper = name.upper()
    # Grace Hopper superchips and the NVL cards are other parts (memory, clocks, power): no datasheet of ours fits
    if "GH200" in upper or "GH100" in upper:
        return "gh200"
    if "H200" in upper:
        return "h200-nvl" if "NVL" in upper else "h200"
    if "H100" in upper:
        return "h100-nvl" if "NVL" in upper else "h100-pcie" if "PCIE" in upper else "h100-sxm"
    if "A100" in upper:
        big = "80GB" in upper or (total_memory_bytes or 0) > 50 * 1024**3
        return "a100-sxm4-80gb" if big else "a100-sxm4-40gb"
    if "V100" in upper:
        return "v100"
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "cuda-unknown"


def _with_spec(kind: str, index: int, name: str, generation: str) -> Device:
    from pytest_genai.devices.specs import load_specs

    return Device(kind=kind, index=index, name=name, generation=generation, spec=load_specs().get(generation))


#: Why the CPU kind is broken without torch (every CPU benchmark, and the CPU's measured spec, run through it).
CPU_NEEDS_TORCH = ("torch is not installed; every CPU benchmark runs through it: pip install torch==2.13.0 (a CPU "
                   "build; a bare `torch` may pull a multi-GB CUDA one), then pip install -e . (README)")


def probe_cpu() -> ProbeResult:
    from pytest_genai.devices.cpu_probe import cpu_name

    if _missing("torch"):  # a broken install, not an absent device: its tests error with this one line
        raise ModuleNotFoundError(CPU_NEEDS_TORCH)
    # The CPU spec is measured lazily by the session (see pytest_genai.devices.registry), not here.
    return ProbeResult("cpu", (Device(kind="cpu", index=0, name=cpu_name(), generation="cpu"),))


def probe_cuda() -> ProbeResult:
    if _missing("torch"):
        return ProbeResult("cuda", reason="torch is not installed")
    import torch

    if not torch.cuda.is_available():
        build = getattr(torch.version, "cuda", None)
        why = "no CUDA device visible" if build else f"torch {torch.__version__} is a CPU-only build"
        return ProbeResult("cuda", reason=why)
    devices = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        devices.append(_with_spec("cuda", i, props.name, cuda_generation(props.name, props.total_memory)))
    return ProbeResult("cuda", tuple(devices))


def hpu_generation(name: str) -> str:
    upper = name.upper()
    for generation in ("GAUDI3", "GAUDI2"):
        if generation in upper:
            return generation.lower()
    return "gaudi" if "GAUDI" in upper else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def probe_hpu() -> ProbeResult:
    # habana_frameworks is a shared package name (habana-media-loader, habana-pyhlml): only its torch part counts
    if _missing("habana_frameworks.torch"):
        return ProbeResult("hpu", reason="habana_frameworks.torch is not installed (no Intel Gaudi PyTorch stack)")
    import habana_frameworks.torch.hpu as hthpu

    if not hthpu.is_available():
        return ProbeResult("hpu", reason="habana_frameworks is installed but reports no HPU")
    devices = []
    for i in range(hthpu.device_count()):
        name = hthpu.get_device_name(i) if hasattr(hthpu, "get_device_name") else "GAUDI"
        devices.append(_with_spec("hpu", i, name, hpu_generation(name)))
    return ProbeResult("hpu", tuple(devices))


def _generation_from_env(kind: str, default: str) -> str:
    return os.environ.get(f"GENAI_{kind.upper()}_GENERATION", default)


def probe_wse() -> ProbeResult:
    if _missing("cerebras.pytorch"):  # not just `cerebras`: cerebras-cloud-sdk installs that package too
        return ProbeResult("wse", reason="the Cerebras PyTorch SDK (cerebras.pytorch) is not installed")
    importlib.import_module("cerebras.pytorch")
    system = os.environ.get("GENAI_WSE_SYSTEM")
    if not system:
        return ProbeResult("wse", reason="cerebras.pytorch is installed but GENAI_WSE_SYSTEM (the CS system address) is not set")
    gen = _generation_from_env("wse", "wse-2")
    return ProbeResult("wse", (_with_spec("wse", 0, f"Cerebras CS system at {system}", gen),))


def probe_rdu() -> ProbeResult:
    if _missing("sambaflow"):
        return ProbeResult("rdu", reason="the SambaFlow SDK (sambaflow) is not installed")
    importlib.import_module("sambaflow")
    gen = _generation_from_env("rdu", "sn30")
    return ProbeResult("rdu", (_with_spec("rdu", 0, "SambaNova RDU", gen),))


def probe_ipu() -> ProbeResult:
    if _missing("poptorch"):
        return ProbeResult("ipu", reason="poptorch (Graphcore Poplar SDK) is not installed")
    import poptorch

    if not poptorch.ipuHardwareIsAvailable():
        return ProbeResult("ipu", reason="poptorch is installed but reports no IPU hardware")
    gen = _generation_from_env("ipu", "bow-ipu")
    return ProbeResult("ipu", (_with_spec("ipu", 0, "Graphcore IPU", gen),))


PROBES: dict[str, Callable[[], ProbeResult]] = {
    "cpu": probe_cpu,
    "cuda": probe_cuda,
    "hpu": probe_hpu,
    "wse": probe_wse,
    "rdu": probe_rdu,
    "ipu": probe_ipu,
}


def _broken(kind: str, error: str) -> ProbeResult:
    return ProbeResult(kind, reason=f"broken ({error})", error=error)


def run_probe(kind: str, probe: Callable[[], ProbeResult] | None = None) -> ProbeResult:
    """Run one probe, never fatally: an exception, or a return value that is not a ProbeResult for ``kind``, becomes
    a broken result naming it."""
    probe = probe or PROBES[kind]
    try:
        result = probe()
    except Exception as exc:  # a broken SDK must not fail the session; its tests error instead
        return _broken(kind, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, ProbeResult) or result.kind != kind:
        return _broken(kind, f"the probe returned {result!r}, not a ProbeResult for {kind!r}")
    return result


def skip_reason(result: ProbeResult) -> str:
    return f"{result.kind}: not available ({result.reason}); to enable: {ENABLE_HINTS[result.kind]}"


def broken_message(result: ProbeResult) -> str:
    """One line for a test that needs a broken kind: the error, how to repair it, how to deselect it."""
    kind = result.kind
    return (f"{kind} broken ({result.error}): the {kind} probe failed; repair the driver or SDK installation "
            f'(`pytest-genai devices` reruns the probe) or deselect these tests with -m "not {kind}"')


def detect_all(kinds: tuple[str, ...] = KINDS) -> dict[str, ProbeResult]:
    return {kind: run_probe(kind) for kind in kinds}
