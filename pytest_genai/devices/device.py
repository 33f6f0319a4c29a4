"""The :class:`Device` value handed to tests: what it is, its spec, and how to synchronize and read memory."""
from __future__ import annotations

import dataclasses
from typing import Any

from pytest_genai.devices.specs import DeviceSpec

KINDS = ("cpu", "cuda", "hpu", "wse", "rdu", "ipu")

#: How to enable each kind, for skip reasons.
#: The hpu extra (optimum-habana), as the README and every skip or error that needs it say it.
HPU_EXTRA_INSTALL = ('`pip install -c ci/constraints-gaudi.txt -e ".[hpu]"` in a checkout, '
                     '`pip install "pytest-genai[hpu]"` otherwise')
ENABLE_HINTS = {
    "cpu": "always available",
    "cuda": "run on a node with an NVIDIA GPU and a CUDA build of torch",
    "hpu": f"run on an Intel Gaudi node with the Gaudi software stack (habana_frameworks) and {HPU_EXTRA_INSTALL}",
    "wse": "run where the Cerebras PyTorch SDK (cerebras.pytorch) is installed and a CS system is configured (GENAI_WSE_SYSTEM); or read its outputs: --genai-dabench-profiles DIR with DIR/wse/ (docs/dabench.md)",
    "rdu": "run on a SambaNova node with the SambaFlow SDK (sambaflow) installed; or read its outputs: --genai-dabench-profiles DIR with DIR/rdu/ (docs/dabench.md)",
    "ipu": "run on a Graphcore IPU machine with the Poplar SDK and poptorch installed; or read its outputs: --genai-dabench-profiles DIR with DIR/ipu/ (docs/dabench.md)",
}


@dataclasses.dataclass(frozen=True)
class Device:
    """An accelerator (or the host CPU) found by a probe."""

    kind: str
    index: int
    name: str
    generation: str
    spec: DeviceSpec | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Device.kind {self.kind!r} is not one of {KINDS}")

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.index}"

    @property
    def torch_device(self) -> Any:
        """The ``torch.device`` for this device, or None where torch has no device for it (wse, rdu, ipu)."""
        if self.kind not in ("cpu", "cuda", "hpu"):
            return None
        import torch

        if self.kind == "cpu":
            return torch.device("cpu")
        return torch.device(self.kind, self.index)

    def synchronize(self) -> None:
        """Wait for all queued work on this device (a no-op on the CPU)."""
        if self.kind == "cuda":
            import torch

            torch.cuda.synchronize(self.index)
        elif self.kind == "hpu":
            import habana_frameworks.torch.hpu as hthpu

            hthpu.synchronize()

    def peak_memory_bytes(self) -> int | None:
        """Peak device memory allocated since the last reset, where the runtime reports it; None otherwise.

        On the CPU this is the process's resident-set high-water mark (``ru_maxrss``), which cannot be reset.
        """
        if self.kind == "cuda":
            import torch

            return int(torch.cuda.max_memory_allocated(self.index))
        if self.kind == "hpu":
            import habana_frameworks.torch.hpu as hthpu

            return int(hthpu.max_memory_allocated(self.index))
        if self.kind == "cpu":
            import resource
            import sys

            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return int(rss if sys.platform == "darwin" else rss * 1024)
        return None

    def allocated_memory_bytes(self) -> int | None:
        """Device memory allocated right now (the allocator's count), where the runtime reports it; None on the CPU
        and the dataflow kinds. Read after :meth:`reset_peak_memory` it is what the next peak starts from."""
        if self.kind == "cuda":
            import torch

            return int(torch.cuda.memory_allocated(self.index))
        if self.kind == "hpu":
            import habana_frameworks.torch.hpu as hthpu

            return int(hthpu.memory_allocated(self.index))
        return None

    def reset_peak_memory(self) -> None:
        if self.kind == "cuda":
            import torch

            # Before this process has a CUDA context (the probe runs in a child; a run of only `-k diffusion`
            # reaches here first) torch raises "Invalid device argument": nothing is allocated yet, and the peak
            # read later counts from the context's start, which is what a reset would give.
            if torch.cuda.is_initialized():
                torch.cuda.reset_peak_memory_stats(self.index)
        elif self.kind == "hpu":
            import habana_frameworks.torch.hpu as hthpu

            hthpu.reset_peak_memory_stats(self.index)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "index": self.index,
            "name": self.name,
            "generation": self.generation,
            "spec": None if self.spec is None else self.spec.to_json(),
        }
