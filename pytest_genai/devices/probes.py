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
    # Grace Hopper superchips and the NVL cards are other parts (memory, clocks, power), each with its own datasheet
    if "GH200" in upper or "GH100" in upper:
        big = "144G" in upper or (total_memory_bytes or 0) > 110 * 1024**3
        return "gh200-144gb" if big else "gh200"
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


#: Files and commands that a vendor's kernel driver or its tools put on a node. Where one exists but the framework
#: finds no device, the driver is there and failing (or the framework build is wrong): the kind is broken, so that
#: ``-m cuda`` on such a node errors instead of going green with an empty JSON.
DRIVER_FILES = {"cuda": ("nvidiactl", "nvidia[0-9]*"), "hpu": ("accel/accel[0-9]*", "hl[0-9]*")}
DRIVER_TOOLS = {"cuda": "nvidia-smi", "hpu": "hl-smi"}


def driver_evidence(kind: str, dev: str = "/dev", which: Callable[[str], str | None] | None = None) -> str | None:
    """What on this node says ``kind``'s driver is installed (a device file under ``dev`` or the vendor's tool on
    PATH), or None."""
    import glob
    import shutil

    for pattern in DRIVER_FILES.get(kind, ()):
        found = sorted(glob.glob(os.path.join(dev, pattern)))
        if found:
            return f"{found[0]} exists"
    tool = DRIVER_TOOLS.get(kind)
    path = (which or shutil.which)(tool) if tool else None
    return f"{tool} is on PATH ({path})" if path else None


def _absent_or_broken(kind: str, why: str, dev: str = "/dev", which: Callable[[str], str | None] | None = None
                      ) -> ProbeResult:
    """Absent with ``why``; broken when the node has the kind's driver (the framework should have found a device)."""
    evidence = driver_evidence(kind, dev, which)
    if evidence is None:
        return ProbeResult(kind, reason=why)
    return _broken(kind, f"{why}, but {evidence}: the driver is installed and not usable from this process "
                         f"(check `{DRIVER_TOOLS[kind]}`, the driver and the framework build)")


#: The probe that runs in a child process: it imports the framework, counts and names the devices, prints one JSON
#: line and exits. The pytest process itself never initializes CUDA or acquires a Gaudi card (a Gaudi is acquired
#: exclusively by the first process that opens it, and a GPU in EXCLUSIVE_PROCESS mode takes one context), so the
#: torchrun ranks that the distributed benchmarks start later find every device free.
_CHILD = r"""
import json, sys
kind = sys.argv[1]
out = {"devices": []}
if kind == "cuda":
    import torch
    out["build"] = torch.version.cuda
    out["available"] = bool(torch.cuda.is_available())
    for i in range(torch.cuda.device_count() if out["available"] else 0):
        p = torch.cuda.get_device_properties(i)
        out["devices"].append({"index": i, "name": p.name, "total_memory": int(p.total_memory)})
else:
    import habana_frameworks.torch.hpu as hthpu
    out["available"] = bool(hthpu.is_available())
    for i in range(hthpu.device_count() if out["available"] else 0):
        name = hthpu.get_device_name(i) if hasattr(hthpu, "get_device_name") else "GAUDI"
        out["devices"].append({"index": i, "name": name, "total_memory": None})
print("GENAI-PROBE " + json.dumps(out))
"""
#: Seconds a child probe may take (a torch import plus driver start-up; a hung driver must not hang the session).
CHILD_TIMEOUT_S = 180.0


def _run_child(kind: str, timeout_s: float = CHILD_TIMEOUT_S) -> dict:
    """Run :data:`_CHILD` for ``kind``; its JSON, or RuntimeError with the child's last words."""
    import json
    import subprocess
    import sys

    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, kind], capture_output=True, text=True,
                              timeout=timeout_s, errors="replace")
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the {kind} probe did not answer in {timeout_s:.0f} s (a hung driver?)") from None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("GENAI-PROBE "):
            return json.loads(line[len("GENAI-PROBE "):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"the {kind} probe process exited {proc.returncode}: {tail}")


def probe_cuda(child: Callable[[str], dict] | None = None) -> ProbeResult:
    if _missing("torch"):
        return ProbeResult("cuda", reason="torch is not installed")
    import torch  # importing torch does not initialize CUDA; only the child process does

    if not getattr(torch.version, "cuda", None):
        return _absent_or_broken("cuda", f"torch {torch.__version__} is a CPU-only build")
    found = (child or _run_child)("cuda")
    if not found.get("available") or not found.get("devices"):
        return _absent_or_broken("cuda", "torch (a CUDA build) sees no CUDA device")
    devices = tuple(_with_spec("cuda", d["index"], d["name"], cuda_generation(d["name"], d.get("total_memory")))
                    for d in found["devices"])
    return ProbeResult("cuda", devices)


#: Gaudi names as the tools print them: the bridge's ``get_device_name`` says ``GAUDI2``; ``hl-smi`` prints the
#: card's part number (``HL-225`` in its table and ``-Q name`` output on Gaudi2 OAM nodes). Part numbers: HL-205
#: Gaudi (first generation), HL-225 / HL-288 Gaudi2 (OAM / PCIe), HL-325L / HL-338 Gaudi3 (OAM / PCIe), from Intel
#: Gaudi product briefs and public ``hl-smi`` captures.
HL_PARTS = {"HL-205": "gaudi", "HL-225": "gaudi2", "HL-288": "gaudi2", "HL-325": "gaudi3", "HL-338": "gaudi3"}


def hpu_generation(name: str) -> str:
    """Map a Gaudi name (the bridge's ``GAUDI2``, or ``hl-smi``'s part number ``HL-225``) to a spec generation."""
    upper = name.upper().strip()
    for generation in ("GAUDI3", "GAUDI2"):
        if generation in upper:
            return generation.lower()
    part = re.match(r"HL-\d{3}", upper)
    if part and part.group(0) in HL_PARTS:
        return HL_PARTS[part.group(0)]
    return "gaudi" if "GAUDI" in upper else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def probe_hpu(child: Callable[[str], dict] | None = None) -> ProbeResult:
    # habana_frameworks is a shared package name (habana-media-loader, habana-pyhlml): only its torch part counts
    if _missing("habana_frameworks.torch"):
        return _absent_or_broken("hpu", "habana_frameworks.torch is not installed (no Intel Gaudi PyTorch stack)")
    found = (child or _run_child)("hpu")
    if not found.get("available") or not found.get("devices"):
        return _absent_or_broken("hpu", "habana_frameworks is installed but reports no HPU")
    return ProbeResult("hpu", tuple(_with_spec("hpu", d["index"], d["name"], hpu_generation(d["name"]))
                                    for d in found["devices"]))


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
