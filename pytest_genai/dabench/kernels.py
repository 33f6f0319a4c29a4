"""CUDA kernel records from a torch.profiler (Kineto) trace, for the allocation ratio.

Format read: the Chrome-trace JSON that ``torch.profiler.profile(...).export_chrome_trace(path)`` writes (Kineto's
``output_json.cpp``): a ``traceEvents`` list whose kernel events have ``"cat": "kernel"``, ``"dur"`` in
microseconds and ``"args"`` with ``"grid": [x, y, z]``, ``"block": [x, y, z]`` and, where CUPTI computes it,
``"est. achieved occupancy %"`` (0-100; older builds wrote ``"est. achieved occupancy"``, a 0-1 fraction).
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from pytest_genai.dabench.allocation import KernelRecord


def _product(dims: Any) -> int:
    if not isinstance(dims, (list, tuple)) or not dims:
        return 0
    out = 1
    for d in dims:
        out *= int(d)
    return out


def kernel_records(trace: Mapping[str, Any]) -> list[KernelRecord]:
    """Every kernel event of a Kineto Chrome trace, as :class:`KernelRecord` (non-kernel events are skipped)."""
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError("not a Kineto/Chrome trace: no 'traceEvents' list at the top level")
    records = []
    for ev in events:
        if not isinstance(ev, Mapping) or ev.get("cat") != "kernel" or ev.get("ph", "X") != "X":
            continue
        args = ev.get("args") or {}
        occ = args.get("est. achieved occupancy %")
        if occ is not None:
            occ = float(occ) / 100.0
        elif args.get("est. achieved occupancy") is not None:
            occ = float(args["est. achieved occupancy"])
        if occ is not None:
            occ = min(1.0, max(0.0, occ))
        records.append(
            KernelRecord(
                name=str(ev.get("name", "")),
                duration_s=float(ev.get("dur", 0.0)) * 1e-6,
                grid_blocks=_product(args.get("grid")),
                block_threads=_product(args.get("block")),
                est_occupancy=occ,
            )
        )
    return records


def profile_kernels(fn: Callable[[], object], device: Any, *, repeats: int = 2) -> list[KernelRecord]:
    """Run ``fn`` ``repeats`` times under the CUDA profiler and return the kernels it launched."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if device.kind != "cuda":
        raise ValueError(f"kernel records need a CUDA device, got {device.kind!r}")
    fn()
    device.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize(device.index)
    fd, path = tempfile.mkstemp(suffix=".json", prefix="dabench-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            return kernel_records(json.load(fh))
    finally:
        os.unlink(path)
