"""High-water mark of live tensor memory on the CPU, with an optional budget that acts as the out-of-memory limit.

The CPU has no resettable allocator counter (``ru_maxrss`` only grows), and exhausting a shared machine's memory is
not an option, so the capacity search on the CPU runs each probe under :class:`TensorMemoryTracker`: a
``TorchDispatchMode`` that sees every op's outputs, accounts each distinct storage once (views and in-place results
share their base's storage) and forgets a storage when it is freed (checked through a weak reference at each op).
It measures tensor bytes the way ``torch.cuda.max_memory_allocated`` does on a GPU (no allocator overhead, no
interpreter memory). When a budget is set, the op that takes live bytes above it raises
:class:`MemoryBudgetExceeded`, like an allocation failure would.
"""
from __future__ import annotations

from typing import Any


class MemoryBudgetExceeded(MemoryError):
    """Live tensor bytes went above the budget of a :class:`TensorMemoryTracker`."""


def make_tracker(budget_bytes: int | None = None) -> Any:
    """A fresh tracker (a context manager); ``budget_bytes=None`` only measures."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    import torch

    if budget_bytes is not None and budget_bytes <= 0:
        raise ValueError(f"budget_bytes must be positive or None, got {budget_bytes!r}")

    class TensorMemoryTracker(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.budget_bytes = budget_bytes
            self.live: dict[int, tuple[Any, int]] = {}
            self.current_bytes = 0
            self.peak_bytes = 0
            self.exceeded = False

        def _sweep(self) -> None:
            dead = [key for key, (ref, _) in self.live.items() if ref.expired()]
            for key in dead:
                self.current_bytes -= self.live.pop(key)[1]

        def track(self, tensors: Any) -> None:
            """Account tensors created before the tracker was entered (e.g. a model's parameters)."""
            self._sweep()
            for t in tree_leaves(tensors):
                if isinstance(t, torch.Tensor) and t.device.type != "meta":
                    storage = t.untyped_storage()
                    ref = StorageWeakRef(storage)
                    if ref.cdata not in self.live:
                        nbytes = storage.nbytes()
                        self.live[ref.cdata] = (ref, nbytes)
                        self.current_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.current_bytes)
            if self.budget_bytes is not None and self.current_bytes > self.budget_bytes:
                self.exceeded = True
                raise MemoryBudgetExceeded(
                    f"live tensor memory {self.current_bytes} B exceeds the budget of {self.budget_bytes} B"
                )

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            self.track(out)
            return out

    return TensorMemoryTracker()
