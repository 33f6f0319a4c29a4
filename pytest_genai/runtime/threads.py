"""The CPU cores this process may use and torch's intra-op thread count (set, and restored after a measurement)."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), the units a CPU allocation ratio is counted against."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def rank_threads(local_world: int) -> int:
    """Intra-op threads of one of ``local_world`` ranks on this node: the cores this process may run on (its
    affinity: Slurm's ``--cpus-per-task``, ``taskset``, a cpuset) shared by the node's ranks, at least one.
    ``os.cpu_count()`` counts every core of the node and oversubscribes an allocation (8 ranks given 64 of 224
    cores started 28 threads each)."""
    return max(1, available_cores() // max(1, local_world))


def pin_threads(threads: int | None) -> int:
    """Fix torch's intra-op CPU threads; returns the number set. Default: ``OMP_NUM_THREADS`` when set (so a shared
    machine's limit is respected), else the cores this process may run on."""
    import torch

    env = os.environ.get("OMP_NUM_THREADS", "")
    n = threads or (int(env) if env.isdigit() and int(env) > 0 else available_cores())
    torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """``with torch_threads(n):`` torch uses ``n`` intra-op threads inside, the previous number again after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
