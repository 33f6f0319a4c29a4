"""Forward-only evaluation throughput: a fixed batch of real evaluation tokens, threads pinned on the CPU, the
device synchronized before the clock is read (threads: :func:`pytest_genai.runtime.threads.pin_threads`). pytest-benchmark (or :func:`time_rounds`) does the timing; this
module prepares the work and turns seconds into tokens per second."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence


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
    from pytest_genai.runtime.timing import time_callable

    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    return list(time_callable(fn, sync=synchronize, warmup=warmup, repeats=rounds).samples)


def tokens_per_s(n_tokens: int, seconds: float) -> float:
    """Tokens per second for ``n_tokens`` processed in ``seconds`` (the median of timed rounds)."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return n_tokens / seconds


#: aten ops whose self time is matrix-multiply work (linear layers and the LM head land in ``mm``/``addmm``).
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm",
                        "aten::_int_mm", "aten::_weight_int8pack_mm", "aten::_weight_int4pack_mm"})


def matmul_share(self_times: dict[str, float], matmul_ops: frozenset[str] = MATMUL_OPS) -> float:
    """Fraction of the total self time spent in matrix multiplies, from ``{op name: self time}``."""
    if not self_times:
        raise ValueError("no profiled operator times; profile at least one forward pass")
    if any(t < 0 for t in self_times.values()):
        raise ValueError("operator self times must be non-negative")
    total = sum(self_times.values())
    if total <= 0:
        raise ValueError("the profiled operators took no time; profile a real forward pass")
    return sum(t for name, t in self_times.items() if name in matmul_ops) / total


def amdahl_ceiling(fixed_share: float) -> float:
    """Largest possible speedup when a ``fixed_share`` of the time cannot be reduced and the rest drops to zero."""
    if not 0 < fixed_share <= 1:
        raise ValueError(f"the fixed share must be in (0, 1], got {fixed_share}")
    return 1.0 / fixed_share


@dataclasses.dataclass(frozen=True)
class OpProfile:
    """One profiled call: self time per aten op (microseconds; CPU time on the CPU, kernel time on CUDA) and the
    floating-point operations of its matrix multiplies (counted by ``FlopCounterMode``)."""

    self_us: dict[str, float]
    matmul_flops: int

    @property
    def matmul_share(self) -> float:
        return matmul_share(self.self_us)

    @property
    def matmul_seconds(self) -> float:
        return sum(t for name, t in self.self_us.items() if name in MATMUL_OPS) / 1e6

    @property
    def matmul_tflops(self) -> float:
        """Achieved matrix-multiply rate: counted matmul FLOPs over the matmul ops' self time."""
        if self.matmul_seconds <= 0:
            raise ValueError("no matrix multiply ran in the profiled call")
        return self.matmul_flops / self.matmul_seconds / 1e12


_FLOP_COUNTED_MATMULS = ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm")


def profile_ops(fn: Callable[[], Any], *, device_kind: str = "cpu") -> OpProfile:
    """Profile one call of ``fn``: per-op self times and the matmul FLOPs it performed."""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_kind == "cuda" else [])
    counter = FlopCounterMode(display=False)
    with counter, profile(activities=activities) as prof:
        fn()
    times: dict[str, float] = {}
    for event in prof.key_averages():
        if device_kind == "cuda":
            value = getattr(event, "self_device_time_total", None)
            value = getattr(event, "self_cuda_time_total", 0.0) if value is None else value
        else:
            value = event.self_cpu_time_total
        if event.key.startswith("aten::") and value > 0:
            times[event.key] = times.get(event.key, 0.0) + float(value)
    counts = counter.get_flop_counts().get("Global", {})
    flops = sum(int(n) for op, n in counts.items() if str(op).split(".")[-1] in _FLOP_COUNTED_MATMULS)
    return OpProfile(times, flops)
