"""Resource allocation ratio (Paper B, B1): on-chip processing units the workload occupies / units available.

Measured only where the runtime exposes a counter; otherwise the metric is absent (None), never invented.

* CPU: the threads given to the run / the cores available (``level1``: how a compiler's unit assignment reads on a
  CPU); :func:`cpu_allocation_ratio`, process CPU time / (wall time x cores) over the timed region, is recorded
  beside it as ``cpu_utilization``: how busy the assigned cores were.
* CUDA: from the profiler's kernel records — per kernel ``min(1, grid blocks / SM count)``, weighted by kernel
  duration; and, where the profiler gives it, the time-weighted estimated achieved occupancy.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable


def cpu_allocation_ratio(cpu_time_s: float, wall_time_s: float, cores: int) -> float:
    """Process CPU seconds over (wall seconds x cores) — 1.0 when every core was busy for the whole region."""
    if not (math.isfinite(cpu_time_s) and cpu_time_s >= 0):
        raise ValueError(f"cpu_time_s must be finite and >= 0, got {cpu_time_s!r}")
    if not (math.isfinite(wall_time_s) and wall_time_s > 0):
        raise ValueError(f"wall_time_s must be finite and > 0, got {wall_time_s!r}")
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ValueError(f"cores must be a positive int, got {cores!r}")
    return cpu_time_s / (wall_time_s * cores)


@dataclasses.dataclass(frozen=True)
class KernelRecord:
    """One GPU kernel execution as a profiler reports it."""

    name: str
    duration_s: float
    grid_blocks: int
    block_threads: int = 0
    est_occupancy: float | None = None  # fraction in [0, 1], where the profiler estimates it

    def __post_init__(self) -> None:
        if not (math.isfinite(self.duration_s) and self.duration_s >= 0):
            raise ValueError(f"kernel {self.name!r}: duration_s must be finite and >= 0, got {self.duration_s!r}")
        if self.grid_blocks < 0:
            raise ValueError(f"kernel {self.name!r}: grid_blocks must be >= 0, got {self.grid_blocks!r}")
        if self.est_occupancy is not None and not 0 <= self.est_occupancy <= 1:
            raise ValueError(f"kernel {self.name!r}: est_occupancy must be a fraction in [0, 1]")


def sm_allocation_ratio(kernels: Iterable[KernelRecord], sm_count: int) -> float | None:
    """Time-weighted ``min(1, blocks / SMs)`` over kernels; None when there is no kernel time to weigh."""
    if isinstance(sm_count, bool) or not isinstance(sm_count, int) or sm_count < 1:
        raise ValueError(f"sm_count must be a positive int, got {sm_count!r}")
    total = weighted = 0.0
    for k in kernels:
        total += k.duration_s
        weighted += k.duration_s * min(1.0, k.grid_blocks / sm_count)
    return None if total == 0 else weighted / total


def occupancy_ratio(kernels: Iterable[KernelRecord]) -> float | None:
    """Time-weighted estimated achieved occupancy over the kernels that carry one; None if none does."""
    total = weighted = 0.0
    for k in kernels:
        if k.est_occupancy is None:
            continue
        total += k.duration_s
        weighted += k.duration_s * k.est_occupancy
    return None if total == 0 else weighted / total
