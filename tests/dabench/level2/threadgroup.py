"""A process group of threads, for running the scaling code's collectives and send/recv in one process.

``ThreadGroup(world)`` gives each rank (thread) ``all_reduce`` (in-place sum), ``send`` and ``recv`` with the same
blocking semantics as ``torch.distributed`` on gloo; torch ops release the GIL, so ranks really run concurrently.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class ThreadGroup:
    def __init__(self, world: int, timeout_s: float = 30.0):
        self.world = world
        self.timeout_s = timeout_s
        self._barrier = threading.Barrier(world, timeout=timeout_s)
        self._slots: list[Any] = [None] * world
        self._pipes = {(a, b): queue.Queue() for a in range(world) for b in range(world) if a != b}
        self.calls = [0] * world

    def rank(self, r: int) -> "RankComm":
        return RankComm(self, r)

    def run(self, fn: Callable[["RankComm"], Any]) -> list[Any]:
        """Run ``fn(comm)`` on ``world`` threads; return their results in rank order (re-raising any error)."""
        results: list[Any] = [None] * self.world
        errors: list[BaseException] = []

        def target(r: int) -> None:
            try:
                results[r] = fn(self.rank(r))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)
                self._barrier.abort()

        threads = [threading.Thread(target=target, args=(r,)) for r in range(self.world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.timeout_s)
        if errors:
            raise errors[0]
        if any(t.is_alive() for t in threads):
            raise TimeoutError("a rank thread hung (a send without a matching recv?)")
        return results


class RankComm:
    def __init__(self, group: ThreadGroup, rank: int):
        self.group = group
        self.rank = rank

    def all_reduce(self, tensor: Any) -> Any:
        g = self.group
        g.calls[self.rank] += 1
        g._slots[self.rank] = tensor.clone()
        g._barrier.wait()
        total = sum(g._slots[1:], g._slots[0].clone())
        g._barrier.wait()
        tensor.copy_(total)
        return tensor

    def send(self, tensor: Any, dst: int) -> None:
        self.group.calls[self.rank] += 1
        self.group._pipes[(self.rank, dst)].put(tensor.detach().clone())

    def recv(self, tensor: Any, src: int) -> Any:
        self.group.calls[self.rank] += 1
        got = self.group._pipes[(src, self.rank)].get(timeout=self.group.timeout_s)
        if got.shape != tensor.shape or got.dtype != tensor.dtype:
            raise ValueError(f"recv buffer {tuple(tensor.shape)}/{tensor.dtype} does not match the sent "
                             f"{tuple(got.shape)}/{got.dtype}")
        tensor.copy_(got)
        return tensor
