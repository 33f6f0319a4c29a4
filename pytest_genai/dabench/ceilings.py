"""The device's ceilings measured in the same session: a large matmul in the config's dtype and a large copy.

Both are the best of several synchronized, warmed-up repeats (:mod:`pytest_genai.runtime.timing`): a ceiling is an upper bound, and
on a shared machine interference only ever lowers a repeat, so the fastest repeat is the estimate (as STREAM
reports its best rate). On a CPU running one torch thread the clock is the process's CPU time, so that a ceiling
is the core's rate while it runs the probe, not a share of it left over by other processes (identical to the wall
clock on an idle machine); elsewhere it is the synchronized wall clock. The copy counts the bytes it reads and the
bytes it writes (2 x buffer size per copy), the same convention as ``bytes_moved`` in :mod:`.counts`.
"""
from __future__ import annotations

from typing import Any

import time

from pytest_genai.runtime.timing import Clock, time_callable

#: (matmul n, copy MiB) per device kind: large enough to reach the ceiling, small enough for the device's memory.
PROBE_SIZES = {"cpu": (1024, 256), "cuda": (8192, 4096), "hpu": (8192, 4096)}


def _sizes(device: Any) -> tuple[int, int]:
    try:
        return PROBE_SIZES[device.kind]
    except KeyError:
        raise ValueError(
            f"no ceiling probe for device kind {device.kind!r}; torch-addressable kinds: {sorted(PROBE_SIZES)}"
        ) from None


def ceiling_clock(device: Any) -> tuple[str, Clock]:
    """(name, clock) used for a device's ceilings: process CPU time for a single-threaded CPU, else wall time."""
    if device.kind == "cpu":
        import torch

        if torch.get_num_threads() == 1:
            return "process_cpu", time.process_time
    return "wall", time.perf_counter


def measure_matmul_tflops(device: Any, dtype: str, *, n: int | None = None, repeats: int = 9) -> float:
    """Best-of-``repeats`` TFLOP/s of an n x n x n matmul (2 n^3 FLOPs) in ``dtype`` on ``device``."""
    import torch

    from pytest_genai.dabench.model import torch_dtype

    n = n or _sizes(device)[0]
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device.torch_device, dtype=torch_dtype(dtype))
    b = torch.randn(n, n, generator=gen).to(device=device.torch_device, dtype=torch_dtype(dtype))
    timing = time_callable(lambda: torch.mm(a, b), sync=device.synchronize, warmup=2, repeats=repeats,
                           clock=ceiling_clock(device)[1])
    return 2 * n**3 / timing.min_s / 1e12


def measure_copy_gbs(device: Any, *, mib: int | None = None, repeats: int = 9) -> float:
    """Best-of-``repeats`` GB/s (read + write) of copying a ``mib`` MiB buffer into another on ``device``."""
    import torch

    mib = mib or _sizes(device)[1]
    src = torch.ones(mib * 2**20, dtype=torch.uint8, device=device.torch_device)
    dst = torch.empty_like(src)
    timing = time_callable(lambda: dst.copy_(src), sync=device.synchronize, warmup=2, repeats=repeats,
                           clock=ceiling_clock(device)[1])
    return 2 * src.numel() / timing.min_s / 1e9
