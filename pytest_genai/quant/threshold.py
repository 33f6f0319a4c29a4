"""The ONE global magnitude threshold tau over many tensors, without concatenating them.

tau is the k-th smallest ``|w|`` over all eligible weights (``k = ceil(sparsity * n)``, see
``metrics.threshold_rank``). Sampled-then-exact:

1. draw ``sample_size`` magnitudes uniformly (proportionally from each tensor), take the sample
   quantiles ``lo <= hi`` that bracket rank ``k`` with a wide margin (6 binomial sigmas);
2. one streaming pass over every tensor, in small chunks, counts ``|w| > hi`` per tensor, keeps
   only the magnitudes inside ``[lo, hi]`` (about 1% of the weights for the default sample) and
   sums ``|w|`` per tensor; tau is then an exact ``kthvalue`` over those candidates.

If the bracket misses rank ``k`` (probability ~1e-9) it is narrowed by counting-only bisection,
so memory stays bounded. The same pass gives each tensor's count above tau and its ``sum |w|``,
which is all the sensitivity definitions need. With ``exact=False`` tau is the sample quantile
and its true rank is still counted exactly and reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .metrics import threshold_rank

_CHUNK = 1 << 18  # elements per streaming chunk (1 MiB of fp32: stays in cache)
_MAX_CANDIDATES = 1 << 26


@dataclass
class ThresholdResult:
    """tau and what the streaming pass learned: per-tensor ``numel``, ``n_above`` (|w| > tau),
    ``sum_abs``; ``k`` the target rank, ``rank`` the number of weights with |w| <= tau."""

    tau: float
    k: int
    n: int
    rank: int
    exact: bool
    numel: list[int]
    n_above: list[int]
    sum_abs: list[float]
    candidates_kept: int


def _flat(w):
    return w.detach().reshape(-1)


def _abs32(x):
    """``|x|`` as fp32 (comparisons against the fp32 threshold are then exact for any weight dtype)."""
    import torch

    x = x.abs()
    return x if x.dtype == torch.float32 else x.float()


def _f32(v: float) -> float:
    import struct

    return struct.unpack("f", struct.pack("f", v))[0]


def sample_abs(weights, sample_size: int, seed: int = 0):
    """Sorted fp32 sample of ``|w|`` of about ``sample_size`` elements, proportional to each tensor's size."""
    import torch

    sizes = [w.numel() for w in weights]
    total = sum(sizes)
    g = torch.Generator().manual_seed(seed)
    parts = []
    for w, size in zip(weights, sizes):
        m = max(1, round(sample_size * size / total))
        if m >= size:
            parts.append(_flat(w).abs().float().cpu())
            continue
        idx = torch.randint(size, (m,), generator=g)
        parts.append(_flat(w)[idx.to(w.device)].abs().float().cpu())
    return torch.sort(torch.cat(parts)).values


def bracket(sample, k: int, n: int, z: float = 6.0) -> tuple[float, float]:
    """Values ``lo <= hi`` of the sorted ``sample`` that contain rank ``k`` of ``n`` with ``z`` sigmas of margin."""
    m = sample.numel()
    p = k / n
    margin = z * math.sqrt(m * p * (1 - p)) + 2
    center = p * m
    lo_i, hi_i = math.floor(center - margin), math.ceil(center + margin)
    lo = float(sample[lo_i]) if lo_i >= 0 else 0.0
    hi = float(sample[hi_i]) if hi_i < m else math.inf
    return lo, hi


def _scan(weights, lo: float, hi: float, keep: bool):
    """Per tensor: ``n_above`` (|w| > hi), ``n_in`` (lo <= |w| <= hi), ``sum_abs``; candidates if ``keep``."""
    import torch

    n_above, n_in, sums, cands = [], [], [], []
    for w in weights:
        flat = _flat(w)
        above = inside = 0
        s = 0.0
        kept = []
        for a in range(0, flat.numel(), _CHUNK):
            x = _abs32(flat[a:a + _CHUNK])
            gt = x > hi
            above += int(gt.sum())
            mask = (x >= lo) & ~gt
            cnt = int(mask.sum())
            inside += cnt
            if keep and cnt:
                kept.append(x[mask])
            s += float(x.sum(dtype=torch.float64))
        n_above.append(above)
        n_in.append(inside)
        sums.append(s)
        if keep:
            cands.append(torch.cat(kept).cpu() if kept else torch.empty(0))
    return n_above, n_in, sums, cands


def _count(weights, value: float, op: str) -> int:
    """Number of weights with ``|w| <= value`` (op 'le') or ``|w| < value`` (op 'lt'), streamed."""
    total = 0
    for w in weights:
        flat = _flat(w)
        for a in range(0, flat.numel(), _CHUNK):
            x = _abs32(flat[a:a + _CHUNK])
            total += int(((x <= value) if op == "le" else (x < value)).sum())
    return total


def _narrow(weights, k: int, lo: float, hi: float) -> tuple[float, float]:
    """Shrink ``[lo, hi]`` (holding rank ``k``) by counting-only bisection until the magnitudes
    inside it are few enough to keep; returns ``(v, v)`` when rank ``k`` is a run of ties."""
    if not math.isfinite(hi):
        hi = max(float(_abs32(w.detach()).max()) for w in weights)
    while True:
        if _count(weights, hi, "le") - _count(weights, lo, "lt") <= _MAX_CANDIDATES:
            return lo, hi
        mid = _f32(lo + (hi - lo) / 2)
        if not lo < mid < hi:  # no fp32 value strictly between: rank k is lo or hi
            v = lo if _count(weights, lo, "le") >= k else hi
            return v, v
        if _count(weights, mid, "le") >= k:
            hi = mid
        else:
            lo = mid


def global_threshold(weights, sparsity: float, *, exact: bool = True, sample_size: int = 1 << 20,
                     seed: int = 0) -> ThresholdResult:
    """tau over the tensors ``weights`` (never concatenated) and per-tensor stats against it."""
    import torch

    weights = list(weights)
    if not weights or any(w.numel() == 0 for w in weights):
        raise ValueError("global_threshold: need at least one non-empty weight tensor")
    n = sum(w.numel() for w in weights)
    k = threshold_rank(sparsity, n)
    sample = sample_abs(weights, sample_size, seed)

    if not exact:
        idx = min(sample.numel() - 1, max(0, math.ceil(k / n * sample.numel()) - 1))
        tau = float(sample[idx])
        n_above, n_in, sums, _ = _scan(weights, tau, tau, keep=False)
        return ThresholdResult(tau, k, n, n - sum(n_above), False, [w.numel() for w in weights],
                               n_above, sums, 0)

    lo, hi = bracket(sample, k, n)
    n_above, n_in, sums, cands = _scan(weights, lo, hi, keep=lo < hi)
    below = n - sum(n_above) - sum(n_in)
    if not below < k <= below + sum(n_in):
        # the sample missed (probability ~1e-9): move to the side that holds rank k, narrow by counting
        lo, hi = (0.0, lo) if k <= below else (hi, math.inf)
        lo, hi = _narrow(weights, k, lo, hi)
        n_above, n_in, sums, cands = _scan(weights, lo, hi, keep=lo < hi)
        below = n - sum(n_above) - sum(n_in)
        if not below < k <= below + sum(n_in):  # pragma: no cover - _narrow keeps rank k inside
            raise RuntimeError(f"global_threshold: rank {k} not in [{lo}, {hi}] after narrowing")

    if lo == hi:
        tau = lo
        n_above_tau = list(n_above)
        kept = 0
    else:
        allc = torch.cat(cands)
        kept = allc.numel()
        tau = float(torch.kthvalue(allc, k - below).values)
        n_above_tau = [na + int((c > tau).sum()) for na, c in zip(n_above, cands)]
    return ThresholdResult(tau, k, n, n - sum(n_above_tau), True, [w.numel() for w in weights],
                           n_above_tau, sums, kept)
