"""Communication calls with their time measured: all-reduce, send and recv through ``torch.distributed``.

Each call is timed on the host clock between device synchronizations (on the CPU, gloo calls are blocking, so the
synchronization is a no-op). The accumulated seconds include waiting for the peer to reach the same call, not only
the transfer itself; that is what a rank loses to communication, and it is reported under that name.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _noop() -> None:
    return None


class TimedComm:
    """Blocking collectives and point-to-point calls of the default process group, with their wall time summed.

    ``seconds`` and ``calls`` accumulate until :meth:`take` returns and resets them.
    """

    def __init__(self, sync: Callable[[], None] | None = None, clock: Callable[[], float] = time.perf_counter):
        self._sync = sync or _noop
        self._clock = clock
        self.seconds = 0.0
        self.calls = 0

    def _timed(self, fn: Callable[[], Any]) -> None:
        self._sync()
        t0 = self._clock()
        fn()
        self._sync()
        self.seconds += self._clock() - t0
        self.calls += 1

    def all_reduce(self, tensor: Any) -> Any:
        """Sum ``tensor`` over all ranks, in place; returns it."""
        import torch.distributed as dist

        self._timed(lambda: dist.all_reduce(tensor))
        return tensor

    def send(self, tensor: Any, dst: int) -> None:
        import torch.distributed as dist

        self._timed(lambda: dist.send(tensor.contiguous(), dst))

    def recv(self, tensor: Any, src: int) -> Any:
        """Receive into ``tensor`` (preallocated with the sender's shape and dtype); returns it."""
        import torch.distributed as dist

        self._timed(lambda: dist.recv(tensor, src))
        return tensor

    def take(self) -> tuple[float, int]:
        """(seconds, calls) since the last take, then reset."""
        out = (self.seconds, self.calls)
        self.seconds, self.calls = 0.0, 0
        return out
