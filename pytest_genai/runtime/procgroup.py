"""One ``torch.distributed`` process-group setup per device kind, for every torchrun worker of the suite.

The backend follows the device kind: ``cpu`` -> gloo, ``cuda`` -> nccl, ``hpu`` -> hccl (Gaudi's collective
library; importing ``habana_frameworks.torch.distributed.hccl`` registers it). A Gaudi process sees one HPU, so an
HPU rank computes on ``torch.device("hpu")`` whatever its local rank, as Habana's own DDP examples do. A CPU rank
gets ``cpu_threads`` intra-op threads (the caller decides: one per rank when ranks share the cores, or the node's
cores divided by its ranks).
"""
from __future__ import annotations

from typing import Any

BACKENDS = {"cpu": "gloo", "cuda": "nccl", "hpu": "hccl"}


def backend_for(kind: str) -> str:
    """The ``torch.distributed`` backend of a device kind."""
    try:
        return BACKENDS[kind]
    except KeyError:
        raise ValueError(f"device kind {kind!r} has no process-group backend; use one of {sorted(BACKENDS)}") from None


def init_process_group(kind: str, local_rank: int, *, cpu_threads: int = 1) -> Any:
    """Bind this rank to its device, start the process group with the kind's backend, and return the
    ``torch.device`` this rank computes on."""
    import torch
    import torch.distributed as dist

    backend = backend_for(kind)
    if kind == "cpu":
        torch.set_num_threads(cpu_threads)
        device = torch.device("cpu")
    elif kind == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:  # pragma: no cover - needs Gaudi
        import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the hccl backend)

        device = torch.device("hpu")  # the one Gaudi the runtime gave this process, whatever its local rank
    dist.init_process_group(backend)
    return device
