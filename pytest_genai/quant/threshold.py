"""The ONE global magnitude threshold tau over many tensors, without concatenating them.

tau is the k-th smallest ``|w|`` over all eligible weights (``k = ceil(sparsity * n)``, see
``metrics.threshold_rank``). Sampled-then-exact:

1. draw ``sample_size`` magnitudes uniformly (proportionally from each tensor), take the sample
   quantiles ``lo <= hi`` that bracket rank ``k`` with a wide margin (6 binomial sigmas);
2. one streaming pass over every tensor, in small chunks, counts ``|w| > hi`` per tensor, keeps
   only the magnitudes inside ``[lo, hi]`` (about 1% of the weights for the default sample) and
   sums ``|w|`` per tensor; tau is then an exact ``kthvalue`` over those candidates.

The streaming pass runs a small C kernel (``csrc/scan.c``: one read of each weight, no data-dependent branch, compiled
on first use; on torch's threads, one tensor per thread) where a C compiler is available and the weights are
contiguous fp32 on the CPU; otherwise torch ops on 1 MiB chunks (the same counts, several passes over each cached
chunk). :func:`scan_path` says which one ran. The order statistics (the bracket's two, then tau among the
candidates) are the same file's radix selection where it is compiled, else numpy's introselect: the same values.

If the bracket misses rank ``k`` (probability ~1e-9) it is narrowed by counting-only bisection,
so memory stays bounded. The same pass gives each tensor's count above tau and its ``sum |w|``,
which is all the sensitivity definitions need. With ``exact=False`` tau is the sample quantile
and its true rank is still counted exactly and reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .metrics import threshold_rank

_CHUNK = 1 << 18  # elements per streaming chunk (1 MiB of fp32: stays in cache)
_MAX_CANDIDATES = 1 << 26
#: At most n / SAMPLE_DIVISOR magnitudes are sampled. With the C kernels the sample's gather (from cold memory) and
#: its two-rank selection cost ~6 ns per sampled value, the final selection ~1.3 ns per candidate, and candidates
#: ~ 5.5 n / sqrt(sample): at 44M weights n / 128 to n / 1024 all cost 1.5-2 ms (measured), against 8-10 ms for the
#: 6-sigma scan itself; past 256M weights ``sample_size`` (2**20) caps it anyway.
SAMPLE_DIVISOR = 256
_KERNEL = Path(__file__).parent / "csrc" / "scan.c"
_LAST_PATH = {"path": ""}


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
    """fp32 sample (unsorted) of about ``min(sample_size, n / SAMPLE_DIVISOR)`` magnitudes (at least 4096), drawn
    proportionally from each tensor as runs of 16 consecutive elements at uniform random offsets
    (16x fewer random numbers than single draws; rows still mix freely)."""
    import torch

    sizes = [w.numel() for w in weights]
    total = sum(sizes)
    m_total = min(sample_size, max(4096, total // SAMPLE_DIVISOR))
    g = torch.Generator().manual_seed(seed)
    run = 16
    plan = []  # per tensor: its run starts, or None for all of it
    for w, size in zip(weights, sizes):
        m = max(1, round(m_total * size / total))
        plan.append(None if m >= size or size < 4 * run
                    else torch.randint(size - run + 1, (max(1, m // run),), generator=g))
    out = torch.empty(sum(size if starts is None else starts.numel() * run
                          for size, starts in zip(sizes, plan)), dtype=torch.float32)
    lib = _native_kernel(weights)
    at = 0
    for w, size, starts in zip(weights, sizes, plan):
        flat = _flat(w)
        count = size if starts is None else starts.numel() * run
        if starts is None:
            out[at:at + count] = _abs32(flat)
        elif lib is not None:  # the C gather: the torch one below costs ~4x as much per sampled value (measured)
            lib.genai_gather_abs_f32(flat.data_ptr(), starts.data_ptr(), starts.numel(), run,
                                     out.data_ptr() + 4 * at)
        else:
            # rows of the overlapping-window view are the runs: one gather, no index tensor of every sampled element
            out[at:at + count] = _abs32(flat.unfold(0, run, 1).index_select(0, starts.to(w.device)).reshape(-1))
        at += count
    return out


def _order_stats(values, indices) -> list[float]:
    """The ``i``-th smallest (0-based) values of the CPU fp32 tensor ``values`` (magnitudes: never negative), for
    each ``i`` of ``indices``: the C kernel's radix selection (~1 ns per value and rank) where it is compiled,
    else one numpy introselect for all ranks (~2x faster than torch.kthvalue per rank)."""
    import torch

    lib = _library() if values.dtype == torch.float32 and values.is_contiguous() else None
    if lib is not None and values.numel():
        scratch = torch.empty(values.numel(), dtype=torch.float32)
        ranks = torch.tensor([int(i) for i in indices], dtype=torch.int64)
        out = torch.empty(ranks.numel(), dtype=torch.float32)
        lib.genai_select_many_f32(values.data_ptr(), values.numel(), ranks.data_ptr(), ranks.numel(),
                                  scratch.data_ptr(), out.data_ptr())
        return [float(x) for x in out.tolist()]
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - torch's numpy bridge is there wherever transformers is
        return [float(torch.kthvalue(values, i + 1).values) for i in indices]
    part = np.partition(values.numpy(), list(indices))
    return [float(part[i]) for i in indices]


def _order_stat(sample, i: int) -> float:
    """The ``i``-th smallest (0-based) value of ``sample`` by selection (no full sort)."""
    return _order_stats(sample, [i])[0]


def bracket(sample, k: int, n: int, z: float = 6.0) -> tuple[float, float]:
    """Values ``lo <= hi`` of ``sample`` that contain rank ``k`` of ``n`` with ``z`` sigmas of margin."""
    m = sample.numel()
    p = k / n
    margin = z * math.sqrt(m * p * (1 - p)) + 2
    center = p * m
    lo_i, hi_i = math.floor(center - margin), math.ceil(center + margin)
    inside = [i for i in (lo_i, hi_i) if 0 <= i < m]
    stats = dict(zip(inside, _order_stats(sample, inside))) if inside else {}
    lo = stats[lo_i] if lo_i >= 0 else 0.0
    hi = stats[hi_i] if hi_i < m else math.inf
    return lo, hi


class _Candidates:
    """Magnitudes inside the bracket, appended into one growable fp32 buffer.

    One long-lived buffer instead of a list of small per-chunk tensors: the small tensors would
    pin freed chunk temporaries in the allocator's heap and grow the process far beyond the
    candidates' own size."""

    def __init__(self, capacity: int):
        import torch

        self.buf = torch.empty(max(1024, capacity), dtype=torch.float32)
        self.size = 0
        self.spans: list[tuple[int, int]] = []  # per tensor: [start, end)

    def append(self, values) -> None:
        import torch

        n = values.numel()
        if self.size + n > self.buf.numel():
            grown = torch.empty(max(2 * self.buf.numel(), self.size + n), dtype=torch.float32)
            grown[: self.size] = self.buf[: self.size]
            self.buf = grown
        self.buf[self.size:self.size + n] = values
        self.size += n

    @classmethod
    def of(cls, buf, counts) -> "_Candidates":
        """Wrap ``buf``, whose first ``sum(counts)`` values are the tensors' candidates in order."""
        out = cls.__new__(cls)
        out.buf, out.size, out.spans = buf, 0, []
        for c in counts:
            out.spans.append((out.size, out.size + c))
            out.size += c
        return out

    def values(self):
        return self.buf[: self.size]

    def span(self, i: int):
        a, b = self.spans[i]
        return self.buf[a:b]


def _library():
    """The compiled kernels (scan, select, count) with their C signatures, or None without a C compiler."""
    from ctypes import POINTER, c_char_p, c_double, c_float, c_int, c_int64, c_void_p

    import torch  # noqa: F401 - first: the kernel's OpenMP runtime is then torch's (native.OPENMP_FLAGS)

    from pytest_genai.runtime import native

    return native.bind(_KERNEL, {
        "genai_scan_f32": (c_int64, (c_void_p, c_int64, c_float, c_float, c_int, c_void_p, c_int64, POINTER(c_int64),
                                     POINTER(c_double))),
        "genai_scan_pieces_f32": (None, (c_void_p, c_void_p, c_int64, c_float, c_float, c_int, c_void_p, c_void_p,
                                         c_void_p, c_void_p, c_void_p, c_int)),
        "genai_scan_openmp": (c_int, ()),
        "genai_scan_isa": (c_char_p, ()),
        "genai_select_many_f32": (None, (c_void_p, c_int64, c_void_p, c_int64, c_void_p, c_void_p)),
        "genai_gather_abs_f32": (None, (c_void_p, c_void_p, c_int64, c_int64, c_void_p)),
        "genai_count_gt_f32": (c_int64, (c_void_p, c_int64, c_float)),
    }, openmp=True)


def _native_kernel(weights):
    """The compiled scan kernel when every weight suits it (contiguous fp32 on the CPU), else None."""
    import torch

    if not all(w.device.type == "cpu" and w.dtype == torch.float32 and w.is_contiguous() for w in weights):
        return None
    return _library()


def scan_path() -> str:
    """Which implementation the last streaming pass used: ``native_c (ISA)`` (the loop compiled in: ``avx512``,
    ``avx2`` or ``portable``; ``, openmp`` when its pieces ran on torch's OpenMP threads) or ``torch`` (with the
    reason the kernel was not used)."""
    return _LAST_PATH["path"]


def _native_label(lib, openmp: bool = False) -> str:
    return f"native_c ({lib.genai_scan_isa().decode()}{', openmp' if openmp else ''})"


#: The native scan's pieces are whole blocks of the C kernel's (4096 elements), so a piece's sums add up the same blocks
#: a whole-tensor call would.
_KERNEL_BLOCK = 4096
#: Pieces per thread: enough that threads finishing at different times wait little for the last piece.
_PIECES_PER_THREAD = 8


def scan_pieces(sizes, threads: int) -> list[tuple[int, int, int]]:
    """``(tensor, start, stop)`` element ranges covering every tensor in order, each at most about
    ``sum(sizes) / (threads * _PIECES_PER_THREAD)`` long and starting on a kernel block, so ``threads`` threads
    share the read evenly whatever the tensors' sizes (one tensor per thread left the largest tensors' thread
    reading alone: a layer of TinyLlama's shape on 2 threads took 16.5 ms, its even split 12.6)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    total = sum(sizes)
    step = max(_KERNEL_BLOCK, -(-total // (threads * _PIECES_PER_THREAD)))
    step = -(-step // _KERNEL_BLOCK) * _KERNEL_BLOCK
    return [(i, a, min(a + step, size)) for i, size in enumerate(sizes) for a in range(0, size, step)]


def _scan_native(lib, weights, lo: float, hi: float, keep: bool, expected: int):
    """``_scan`` through the C kernel: one read of each weight, in pieces of about equal size spread over the torch
    threads (:func:`scan_pieces`; on torch's OpenMP threads where the kernel is built with OpenMP, else a pool).
    Each piece's in-bracket values go straight into its region of one buffer (sized from ``expected``); the regions
    are moved together after, so each tensor's values stay contiguous and in order."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    import torch

    flats = [w.detach().reshape(-1) for w in weights]
    threads = max(1, torch.get_num_threads())
    pieces = scan_pieces([f.numel() for f in flats], threads)
    n_total = sum(f.numel() for f in flats)
    share = expected / n_total if n_total else 0.0
    caps = [int((b - a) * share * 1.5) + 256 if keep else 0 for _, a, b in pieces]
    offsets = [0]
    for cap in caps:
        offsets.append(offsets[-1] + cap)
    buf = torch.empty(max(offsets[-1], 1), dtype=torch.float32)
    # lo / hi pass as C floats (rounded to nearest), as torch compares fp32 weights with a Python scalar

    def one(j, first=None):
        """Piece j through the kernel (``first``: its result from the OpenMP call, re-read only on overflow)."""
        i, a, b = pieces[j]
        ptr = flats[i].data_ptr() + 4 * a
        out, cap = buf[offsets[j]:], caps[j]
        while True:
            if first is None:
                above, total = ctypes.c_int64(), ctypes.c_double()
                inside = lib.genai_scan_f32(ptr, b - a, lo, hi, int(keep), out.data_ptr(), cap, ctypes.byref(above),
                                            ctypes.byref(total))
                above, total = above.value, total.value
            else:
                (above, inside, total), first = first, None
            if not keep or inside <= cap:
                break
            # the bracket held more than expected here: read this piece again into its own buffer with room for all
            out, cap = torch.empty(inside, dtype=torch.float32), inside
        return above, inside, total, (out if out.data_ptr() != buf[offsets[j]:].data_ptr() else None)

    if threads > 1 and len(pieces) > 1 and lib.genai_scan_openmp():
        _LAST_PATH["path"] = _native_label(lib, openmp=True)
        count = len(pieces)
        ptrs = (ctypes.c_void_p * count)(*[flats[i].data_ptr() + 4 * a for i, a, _ in pieces])
        lens = (ctypes.c_int64 * count)(*[b - a for _, a, b in pieces])
        outs = (ctypes.c_void_p * count)(*[buf.data_ptr() + 4 * o for o in offsets[:-1]])
        room = (ctypes.c_int64 * count)(*caps)
        above, total, inside = (ctypes.c_int64 * count)(), (ctypes.c_double * count)(), (ctypes.c_int64 * count)()
        lib.genai_scan_pieces_f32(ptrs, lens, count, lo, hi, int(keep), outs, room, above, total, inside,
                                  min(threads, count))
        results = [one(j, (above[j], inside[j], total[j])) for j in range(count)]
    elif threads > 1 and len(pieces) > 1:
        with ThreadPoolExecutor(min(threads, len(pieces))) as pool:
            results = list(pool.map(one, range(len(pieces))))
    else:
        results = [one(j) for j in range(len(pieces))]
    n_above, n_in, sums = [0] * len(flats), [0] * len(flats), [0.0] * len(flats)
    for (i, _, _), (above, inside, total, _) in zip(pieces, results):
        n_above[i] += above
        n_in[i] += inside
        sums[i] += total
    if not keep:
        return n_above, n_in, sums, None
    if any(r[3] is not None for r in results):  # a region overflowed (rare): gather the pieces into a new buffer
        parts = [r[3] if r[3] is not None else buf[offsets[j]:offsets[j] + r[1]] for j, r in enumerate(results)]
        return n_above, n_in, sums, _Candidates.of(torch.cat(parts), n_in)
    fill = 0  # regions in order, each moved to the end of the previous one's values (memmove: never forward)
    for j, r in enumerate(results):
        inside = r[1]
        if inside and fill != offsets[j]:
            ctypes.memmove(buf.data_ptr() + 4 * fill, buf.data_ptr() + 4 * offsets[j], 4 * inside)
        fill += inside
    return n_above, n_in, sums, _Candidates.of(buf, n_in)


def _scan(weights, lo: float, hi: float, keep: bool, expected: int = 0):
    """Per tensor: ``n_above`` (|w| > hi), ``n_in`` (lo <= |w| <= hi), ``sum_abs``; and the
    in-bracket magnitudes (a ``_Candidates``) if ``keep``."""
    import torch

    lib = _native_kernel(weights)
    if lib is not None:
        _LAST_PATH["path"] = _native_label(lib)
        return _scan_native(lib, weights, lo, hi, keep, expected)
    from pytest_genai.runtime import native

    _LAST_PATH["path"] = "torch" + (f" ({native.why_not(_KERNEL)})" if native.why_not(_KERNEL) else "")

    n_above, n_in, sums = [], [], []
    cands = _Candidates(int(expected * 1.25)) if keep else None
    buf = torch.empty(_CHUNK, dtype=torch.float32)
    gt = torch.empty(_CHUNK, dtype=torch.bool)
    inside_mask = torch.empty(_CHUNK, dtype=torch.bool)
    for w in weights:
        flat = _flat(w)
        if buf.device != flat.device:
            buf, gt, inside_mask = (t.to(flat.device) for t in (buf, gt, inside_mask))
        above = inside = 0
        s = 0.0
        start = cands.size if keep else 0
        for a in range(0, flat.numel(), _CHUNK):
            chunk = flat[a:a + _CHUNK]
            k = chunk.numel()
            x, g1, g2 = buf[:k], gt[:k], inside_mask[:k]
            if chunk.dtype == torch.float32:
                torch.abs(chunk, out=x)
            else:  # bf16 / fp16 weights: widen into the fp32 scratch first
                x.copy_(chunk).abs_()
            torch.gt(x, hi, out=g1)
            n_gt = int(g1.sum())
            torch.ge(x, lo, out=g2)
            cnt = int(g2.sum()) - n_gt
            above += n_gt
            inside += cnt
            if keep and cnt:
                g2.logical_and_(g1.logical_not_())
                cands.append(x[g2].cpu())
            s += float(x.sum())  # fp32 within a chunk (no fp64 copy of it), fp64 across chunks
        n_above.append(above)
        n_in.append(inside)
        sums.append(s)
        if keep:
            cands.spans.append((start, cands.size))
    return n_above, n_in, sums, cands


def _count_above(values, tau: float) -> int:
    """How many of the candidates ``values`` (a CPU fp32 tensor) are > ``tau``."""
    lib = _library() if values.is_contiguous() else None
    if lib is not None:
        return int(lib.genai_count_gt_f32(values.data_ptr(), values.numel(), tau))
    return int((values > tau).sum())


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
    weights = list(weights)
    if not weights or any(w.numel() == 0 for w in weights):
        raise ValueError("global_threshold: need at least one non-empty weight tensor")
    n = sum(w.numel() for w in weights)
    k = threshold_rank(sparsity, n)
    sample = sample_abs(weights, sample_size, seed)

    if not exact:
        idx = min(sample.numel() - 1, max(0, math.ceil(k / n * sample.numel()) - 1))
        tau = _order_stat(sample, idx)
        n_above, n_in, sums, _ = _scan(weights, tau, tau, keep=False)
        return ThresholdResult(tau, k, n, n - sum(n_above), False, [w.numel() for w in weights],
                               n_above, sums, 0)

    lo, hi = bracket(sample, k, n)
    expected = int(n * (2 * 6.0 * math.sqrt(k / n * (1 - k / n) / sample.numel()) + 4 / sample.numel()))
    n_above, n_in, sums, cands = _scan(weights, lo, hi, keep=lo < hi, expected=expected)
    below = n - sum(n_above) - sum(n_in)
    if not below < k <= below + sum(n_in):
        # the sample missed (probability ~1e-9): move to the side that holds rank k, narrow by counting
        lo, hi = (0.0, lo) if k <= below else (hi, math.inf)
        lo, hi = _narrow(weights, k, lo, hi)
        n_above, n_in, sums, cands = _scan(weights, lo, hi, keep=lo < hi, expected=min(n, _MAX_CANDIDATES))
        below = n - sum(n_above) - sum(n_in)
        if not below < k <= below + sum(n_in):  # pragma: no cover - _narrow keeps rank k inside
            raise RuntimeError(f"global_threshold: rank {k} not in [{lo}, {hi}] after narrowing")

    if lo == hi:
        tau = lo
        n_above_tau = list(n_above)
        kept = 0
    else:
        allc = cands.values()
        kept = allc.numel()
        tau = _order_stat(allc, k - below - 1)
        n_above_tau = [na + _count_above(cands.span(i), tau) for i, na in enumerate(n_above)]
    return ThresholdResult(tau, k, n, n - sum(n_above_tau), True, [w.numel() for w in weights],
                           n_above_tau, sums, kept)
