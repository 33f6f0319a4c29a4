"""Measure the host CPU's ceilings once: a matmul (FLOP/s) and a large copy (bytes/s).

The CPU has no datasheet peak we can trust for a shared, throttled machine, so its spec is measured and marked
``source = "measured"``.
"""
from __future__ import annotations

import os
import time

from pytest_genai.devices.specs import DeviceSpec


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "cpu"


def memory_capacity_gb(cgroup_root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> float | None:
    """The RAM this process's runs may use, in GB: the node's physical RAM, or its cgroup's limit (a Slurm job, a
    container) where smaller; None where neither can be read."""
    from pytest_genai.runtime.memtrack import cgroup_limit_bytes

    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = None
    known = [b for b in (physical, cgroup_limit_bytes(cgroup_root, proc_cgroup)) if b is not None]
    return min(known) / 1e9 if known else None


def measure_cpu_spec(matmul_n: int = 1536, copy_mib: int = 128, repeats: int = 8) -> DeviceSpec:
    """Best-of-``repeats`` fp32 matmul TFLOP/s and copy GB/s with all of torch's threads, after a warm-up.

    A ceiling is the best the machine does, so the fastest repeat counts (a median would fold in the noise of
    other processes on a shared machine)."""
    import torch

    threads = torch.get_num_threads()
    a = torch.randn(matmul_n, matmul_n)
    b = torch.randn(matmul_n, matmul_n)
    torch.mm(a, b)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    tflops = 2 * matmul_n**3 / min(times) / 1e12

    n = copy_mib * 1024 * 1024 // 4
    src = torch.ones(n)
    dst = torch.empty(n)
    dst.copy_(src)  # warm-up, pages touched
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t0)
    gbs = 2 * n * 4 / min(times) / 1e9  # read + write
    mem_gb = memory_capacity_gb()
    return DeviceSpec(
        generation="cpu",
        kind="cpu",
        name=cpu_name(),
        source=f"measured (fp32 {matmul_n}^3 matmul and {copy_mib} MiB copy, best of {repeats}, {threads} threads)",
        peak_tflops_by_dtype={"fp32": tflops},
        mem_bandwidth_gbs=gbs,
        mem_capacity_gb=mem_gb,
        compute_units=os.cpu_count(),
        compute_unit_name="core",
        threads=threads,
        unknown=("tf32", "fp16", "bf16", "fp8", "onchip_mem_mb"),
    )
