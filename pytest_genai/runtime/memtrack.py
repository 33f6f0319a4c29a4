"""Peak bytes of live torch tensors on the CPU: the CPU analogue of ``torch.cuda.max_memory_allocated``, with an
optional budget that acts as the out-of-memory limit.

The CPU allocator keeps no resettable statistics (``ru_maxrss`` only grows) and a process's resident set also holds
libraries, thread stacks and allocator caches, so the CPU paths count tensor memory themselves: the tracker is a
``TorchDispatchMode`` that sees every tensor an operator returns (including those made from C++ by DDP, FSDP and
DeepSpeed on the calling thread), accounts each storage once (views and in-place results share their base's
storage; a DTensor counts its local shard) at its current size (a storage resized in place is re-read), keeps a weak
reference to it, and forgets it once freed (checked at each operator) or when the tracker is left. Buffers outside torch (gloo's own) are not counted, as on CUDA. When a
budget is set, the operator that takes live bytes above it raises :class:`MemoryBudgetExceeded`, like an
allocation failure would.

Used by the fine-tuning workers over model construction and the untimed warm-up steps (it costs Python work per
operator) and by DABench's CPU capacity search (with a budget).
"""
from __future__ import annotations

import os

from typing import Any


class MemoryBudgetExceeded(MemoryError):
    """Live tensor bytes went above the budget of a tracker from :func:`make_tracker`."""


def make_tracker(budget_bytes: int | None = None) -> Any:
    """A fresh tracker (a context manager): ``with tracker: ...``; then ``tracker.peak_bytes`` and
    ``tracker.current_bytes``. ``budget_bytes=None`` only measures."""
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    if budget_bytes is not None and budget_bytes <= 0:
        raise ValueError(f"budget_bytes must be positive or None, got {budget_bytes!r}")

    class TensorMemoryTracker(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.budget_bytes = budget_bytes
            self.live: dict[int, tuple[Any, int]] = {}
            self._counted = 0
            self.peak_bytes = 0
            self.exceeded = False

        def _sweep(self) -> None:
            """Forget freed storages and re-read the size of the live ones: a storage can be shrunk or regrown in
            place (``untyped_storage().resize_``, how FSDP2 frees and re-allocates its all-gather buffers), which no
            operator returns."""
            for key, (ref, held) in list(self.live.items()):
                if ref.expired():
                    self._counted -= self.live.pop(key)[1]
                    continue
                now = torch.UntypedStorage._new_with_weak_ptr(ref.cdata).nbytes()
                if now != held:
                    self._counted += now - held
                    self.live[key] = (ref, now)

        def _add(self, tensor: Any) -> None:
            local = getattr(tensor, "_local_tensor", None)  # DTensor (FSDP2): count its local shard
            if local is not None:
                tensor = local
            if tensor.device.type != "cpu":  # also skips meta tensors
                return
            try:
                storage = tensor.untyped_storage()
            except (RuntimeError, NotImplementedError):  # tensor subclasses without a storage
                return
            key = storage._cdata  # the storage itself (its address changes when it is resized in place)
            nbytes = storage.nbytes()
            held = self.live.get(key)
            if held is not None:
                if not held[0].expired():
                    if nbytes != held[1]:  # resized in place since it was last seen
                        self._counted += nbytes - held[1]
                        self.live[key] = (held[0], nbytes)
                    return
                self._counted -= held[1]  # a freed storage's slot, reused before a sweep
            self.live[key] = (StorageWeakRef(storage), nbytes)
            self._counted += nbytes

        def track(self, tensors: Any) -> None:
            """Account tensors (any pytree of them) that already exist, e.g. made before the tracker was entered."""
            for leaf in tree_leaves(tensors):
                if isinstance(leaf, torch.Tensor):
                    self._add(leaf)
            # Between sweeps the count also includes storages freed since the last one: an upper bound on the live
            # bytes. Only when that bound passes the peak (or the budget) can either change, so only then is the
            # table swept (a sweep per operator made warm-up steps several times slower); the peak stays exact.
            limit = self.peak_bytes if self.budget_bytes is None else min(self.peak_bytes, self.budget_bytes)
            if self._counted > limit:
                self._sweep()
                self.peak_bytes = max(self.peak_bytes, self._counted)
            if self.budget_bytes is not None and self._counted > self.budget_bytes:
                self.exceeded = True
                raise MemoryBudgetExceeded(
                    f"live tensor memory {self._counted} B exceeds the budget of {self.budget_bytes} B"
                )

        @property
        def current_bytes(self) -> int:
            """The bytes of the tracked storages alive now."""
            self._sweep()
            return self._counted

        def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> Any:
            """Leaving keeps ``peak_bytes`` and drops the weak references (``current_bytes`` then reads 0): each one
            keeps its storage's bookkeeping alive after the storage is freed, which slows later timed steps."""
            try:
                return super().__exit__(exc_type, exc_value, traceback)
            finally:
                self.live.clear()
                self._counted = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            self.track(out)
            return out

    return TensorMemoryTracker()


def fixed_overhead_bytes(allocated: Any, warm: Any) -> int:
    """Device memory a runtime keeps for itself once work has run: ``allocated()`` before and after ``warm()``
    (which must free everything it made). On CUDA this is cuBLAS's and cuBLASLt's workspaces, held per handle and
    stream by the caching allocator once a matmul ran (32 MiB by default on Hopper): counted in every peak, in no
    model of the tensors a run needs."""
    before = int(allocated())
    warm()
    return max(int(allocated()) - before, 0)


def cuda_fixed_overhead_bytes(torch_device: Any) -> int:
    """:func:`fixed_overhead_bytes` on a CUDA device: a small fp32 and bf16 matmul, forward and backward."""
    import torch

    def warm() -> None:
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(64, 64, device=torch_device, dtype=dtype, requires_grad=True)
            (x @ x).sum().backward()
            del x
        torch.cuda.synchronize(torch_device)

    return fixed_overhead_bytes(lambda: torch.cuda.memory_allocated(torch_device), warm)


def host_available_bytes(meminfo: str = "/proc/meminfo", cgroup_root: str = "/sys/fs/cgroup",
                         proc_cgroup: str = "/proc/self/cgroup") -> int | None:
    """RAM this process's jobs may still take: the node's ``MemAvailable`` or, when smaller, the headroom under its
    cgroup's memory limit (a Slurm job's or a container's: cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``);
    None where neither can be read (not Linux)."""
    node = None
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    node = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    limited = cgroup_available_bytes(cgroup_root, proc_cgroup)
    known = [b for b in (node, limited) if b is not None]
    return min(known) if known else None


#: (limit file, usage file) of the memory controller: cgroup v2, then v1. v1's "no limit" is a huge number.
_CGROUP_FILES = {"v2": ("memory.max", "memory.current"), "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes")}
_V1_UNLIMITED = 2**60


def _cgroup_dirs(cgroup_root: str, proc_cgroup: str) -> list[tuple[str, str]]:
    """(version, folder) of every memory cgroup above this process, innermost first; the mount itself is always a
    candidate (in a container the process's own cgroup is mounted at the root)."""
    try:
        with open(proc_cgroup, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            version, mount = "v2", (cgroup_root if os.path.exists(os.path.join(cgroup_root, "cgroup.controllers"))
                                    else os.path.join(cgroup_root, "unified"))
        elif "memory" in controllers.split(","):
            version, mount = "v1", os.path.join(cgroup_root, controllers)
        else:
            continue
        rel = path.strip("/")
        while True:
            found.append((version, os.path.join(mount, rel) if rel else mount))
            if not rel:
                break
            rel = os.path.dirname(rel)
    return found


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def cgroup_available_bytes(cgroup_root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int | None:
    """The smallest headroom (limit - usage) of the memory cgroups this process is in, or None when none sets a
    limit (or none can be read)."""
    headrooms = []
    for version, folder in _cgroup_dirs(cgroup_root, proc_cgroup):
        limit_file, usage_file = _CGROUP_FILES[version]
        limit = _read_int(os.path.join(folder, limit_file))
        if limit is None or limit >= _V1_UNLIMITED:
            continue
        usage = _read_int(os.path.join(folder, usage_file)) or 0
        headrooms.append(max(limit - usage, 0))
    return min(headrooms) if headrooms else None


def cgroup_limit_bytes(cgroup_root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int | None:
    """The smallest memory limit of the cgroups this process is in (a Slurm job's, a container's), or None when none
    sets one."""
    limits = []
    for version, folder in _cgroup_dirs(cgroup_root, proc_cgroup):
        limit = _read_int(os.path.join(folder, _CGROUP_FILES[version][0]))
        if limit is not None and limit < _V1_UNLIMITED:
            limits.append(limit)
    return min(limits) if limits else None
