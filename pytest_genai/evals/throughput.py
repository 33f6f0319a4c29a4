"""Forward-only evaluation throughput: a fixed batch of real evaluation tokens, threads pinned on the CPU, the
device synchronized before the clock is read. pytest-benchmark (or :func:`time_rounds`) does the timing; this
module prepares the work and turns seconds into tokens per second."""
from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable, Sequence


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def pin_threads(threads: int | None) -> int:
    """Fix torch's intra-op CPU threads; returns the number set. Default: ``OMP_NUM_THREADS`` when set (so a shared
    machine's limit is respected), else the cores this process may run on."""
    import torch

    env = os.environ.get("OMP_NUM_THREADS", "")
    n = threads or (int(env) if env.isdigit() and int(env) > 0 else available_cores())
    torch.set_num_threads(n)
    return n


def token_batch(tokens: Sequence[int], batch_size: int, seq_len: int) -> Any:
    """The first ``batch_size * seq_len`` tokens as a ``[batch_size, seq_len]`` tensor (no padding); an error when
    the text is too short, naming how many tokens it has."""
    import torch

    need = batch_size * seq_len
    if len(tokens) < need:
        raise ValueError(f"the throughput batch needs {need} tokens ({batch_size} x {seq_len}) but the text has "
                         f"{len(tokens)}; lower the batch size or the sequence length")
    return torch.tensor(list(tokens[:need]), dtype=torch.long).view(batch_size, seq_len)


def forward_fn(model: Any, ids: Any, device: Any, synchronize: Callable[[], None]) -> Callable[[], None]:
    """A callable running one forward pass of ``ids`` (on ``device``) and waiting for the device to finish."""
    import torch

    ids = ids.to(device)
    model.eval()

    def run() -> None:
        with torch.inference_mode():
            model(input_ids=ids, use_cache=False)
        synchronize()

    return run


def time_rounds(fn: Callable[[], Any], *, rounds: int, warmup: int, synchronize: Callable[[], None] = lambda: None) -> list[float]:
    """Seconds of each of ``rounds`` timed calls after ``warmup`` untimed ones (device synchronized around each)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    for _ in range(warmup):
        fn()
    synchronize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - start)
    return times


def tokens_per_s(n_tokens: int, seconds: float) -> float:
    """Tokens per second for ``n_tokens`` processed in ``seconds`` (the median of timed rounds)."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return n_tokens / seconds


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
