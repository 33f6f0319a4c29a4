"""Peak bytes of live torch tensors on the CPU: the CPU analogue of ``torch.cuda.max_memory_allocated``.

The CPU allocator keeps no statistics and a process's resident set also holds libraries, thread stacks and
allocator caches, so the training workers count tensor memory themselves: :class:`LiveTensorBytes` is a
``TorchDispatchMode`` that sees every tensor an operator returns (including those made from C++ by DDP,
FSDP and DeepSpeed on the calling thread), keeps a weak reference to its storage, and adds up the storages
still alive after each operator. Buffers outside torch (gloo's own) are not counted, as on CUDA.

It costs Python work per operator, so workers use it only over model construction and the untimed warm-up
steps (the peak is reached in the second step, once the optimizer states exist).
"""

from __future__ import annotations

from typing import Any


def _make_mode_class():
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class _LiveTensorBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, tuple[Any, int]] = {}
            self.current = 0
            self.peak = 0

        def _sweep(self) -> None:
            dead = [key for key, (ref, _) in self.live.items() if ref.expired()]
            for key in dead:
                self.current -= self.live.pop(key)[1]

        def _add(self, tensor: Any) -> None:
            local = getattr(tensor, "_local_tensor", None)  # DTensor (FSDP2): count its local shard
            if local is not None:
                tensor = local
            if tensor.device.type != "cpu" or tensor.is_meta:
                return
            try:
                storage = tensor.untyped_storage()
            except (RuntimeError, NotImplementedError):  # tensor subclasses without a storage (e.g. DTensor)
                return
            key = storage.data_ptr()
            if key == 0 or key in self.live:
                return
            nbytes = storage.nbytes()
            self.live[key] = (StorageWeakRef(storage), nbytes)
            self.current += nbytes
            self.peak = max(self.peak, self.current)

        def track(self, tensors) -> None:
            """Count tensors that already exist (e.g. made before the mode was entered)."""
            self._sweep()
            for t in tensors:
                if isinstance(t, torch.Tensor):
                    self._add(t)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self._sweep()
            for leaf in tree_leaves(out):
                if isinstance(leaf, torch.Tensor):
                    self._add(leaf)
            return out

    return _LiveTensorBytes


def live_tensor_bytes():
    """A new tracker: ``with tracker: ...``; then ``tracker.peak`` (bytes) and ``tracker.current``."""
    return _make_mode_class()()
