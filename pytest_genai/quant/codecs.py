"""Quantize / dequantize weight matrices in every format of :mod:`pytest_genai.quant.formats`.

Layout of a :class:`QuantizedWeight` (``rows`` = out_features, ``cols`` = in_features):

- ``fp32`` / ``fp16`` / ``bf16``: ``data`` is the cast matrix, no scale.
- ``int8``: ``data`` int8 ``(rows, cols)``; ``scale`` fp32 ``(rows, cols // group)`` (``(rows, 1)``
  per output channel).
- ``int4``: ``data`` uint8 ``(rows, cols // 2)``, code ``q + 8`` of even column in the low nibble,
  odd column in the high nibble; ``scale`` fp32 ``(rows, cols // group)``.
- ``fp8_e4m3`` / ``fp8_e5m2``: ``data`` ``torch.float8_e4m3fn`` / ``torch.float8_e5m2``; ``scale`` as int8.

Work is done in row chunks so a layer never needs more than a bounded fp32 temporary.
Error bounds are documented in :mod:`pytest_genai.quant.formats`.
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .formats import FormatSpec, get_format

_CHUNK_ELEMENTS = 1 << 18  # elements of the fp32 scratch buffer per chunk (1 MiB: stays in cache)


def _torch():
    import torch

    return torch


def storage_dtype(fmt: str | FormatSpec):
    """The torch dtype ``data`` has in format ``fmt``."""
    return get_format(fmt).storage_dtype()


@dataclass
class QuantizedWeight:
    """A weight matrix stored in format ``spec``: ``data`` (+ fp32 ``scale``), original ``shape``, ``group_size``."""

    spec: FormatSpec
    data: Any
    scale: Any | None
    shape: tuple[int, int]
    group_size: int | None

    def __post_init__(self) -> None:
        self.spec = get_format(self.spec)

    @property
    def fmt(self) -> str:
        return self.spec.name

    def nbytes(self) -> int:
        """Bytes held by ``data`` and ``scale``."""
        n = self.data.numel() * self.data.element_size()
        if self.scale is not None:
            n += self.scale.numel() * self.scale.element_size()
        return n

    def select_rows(self, index) -> "QuantizedWeight":
        """The rows ``index`` (a LongTensor) of this weight, still quantized (for embeddings)."""
        data = self.data[index]
        scale = None if self.scale is None else self.scale[index]
        return QuantizedWeight(self.spec, data, scale, (int(data.shape[0]), self.shape[1]), self.group_size)


def round_scale_up(scale):
    """Round positive fp32 scales up to 16 significant bits.

    With at most 16 significant bits, ``qmax * s`` is exact in fp32 for every ``qmax`` used here
    (127, 7, 448, 57344 have at most 7 significant bits), so re-quantizing a dequantized tensor
    finds the same scale: quantization becomes exactly idempotent. Rounding *up* keeps
    ``|w| / s <= qmax``, so no code is clamped. Relative change of the scale: < 2**-15.
    """
    torch = _torch()
    mantissa, exponent = torch.frexp(scale)
    mantissa = torch.ceil(mantissa * 65536.0) / 65536.0
    return torch.ldexp(mantissa, exponent.to(scale.dtype)).to(scale.dtype)


def _check_weight(w, where: str) -> None:
    torch = _torch()
    if w.dim() != 2:
        raise ValueError(f"{where}: expected a 2-D weight matrix, got shape {tuple(w.shape)}")
    if w.numel() == 0:
        raise ValueError(f"{where}: weight is empty (shape {tuple(w.shape)})")
    if not w.is_floating_point():
        raise ValueError(f"{where}: weight dtype {w.dtype} is not floating point; quantize an fp32/bf16/fp16 model")


def _row_amax(w, group: int):
    """max |w| per row and group, from two fast reductions (amax, amin); nan/inf propagate."""
    torch = _torch()
    rows, cols = w.shape
    grouped = w.reshape(rows, cols // group, group)
    return torch.maximum(grouped.amax(dim=-1), grouped.amin(dim=-1).neg_()).to(torch.float32)


def _nonfinite(where: str) -> ValueError:
    return ValueError(f"{where}: weight contains inf or nan; fix the model before quantizing")


def _check_finite(amax, where: str) -> None:
    torch = _torch()
    if not bool(torch.isfinite(amax).all()):  # amax over rows carries any nan / inf of the weight
        raise _nonfinite(where)


def compute_scales(w, spec: FormatSpec, group_size: int | None, where: str = "weight"):
    """fp32 scales ``(rows, groups)``: ``amax / qmax`` rounded up (1.0 where a row/group is all zero)."""
    g = spec.effective_group_size(group_size) or w.shape[1]
    amax = _row_amax(w, g)  # two reductions: much faster on CPU than aminmax or abs().amax()
    _check_finite(amax, where)
    return _scales_from_amax(amax, spec.qmax)


#: The smallest normal fp32, the floor of a nonzero row's scale: below it ``amax / qmax`` is subnormal, keeps only a
#: few bits, and ``round_scale_up`` cannot round it up, so the scale came out *below* ``amax / qmax``, the top
#: codes clamped and the round-trip error exceeded s/2 (int8 rows of |w| ~ 4e-43: 60x). At the floor a row that
#: small quantizes to zeros within s/2.
MIN_SCALE = 2.0 ** -126


def _scales_from_amax(amax, qmax: float):
    """``amax / qmax`` rounded up, at least :data:`MIN_SCALE`; 1.0 for an all-zero row."""
    torch = _torch()
    scale = torch.clamp(amax / qmax, min=MIN_SCALE)
    return round_scale_up(torch.where(amax > 0, scale, torch.ones_like(scale)))


def _row_chunks(rows: int, cols: int):
    step = max(1, _CHUNK_ELEMENTS // max(cols, 1))
    for start in range(0, rows, step):
        yield start, min(rows, start + step)


_INT8_KERNEL = Path(__file__).parent / "csrc" / "int8.c"


def _int8_library():
    """The compiled per-channel int8 kernel with its C signature, or None (no C compiler, or disabled)."""
    from ctypes import c_int64, c_void_p

    from pytest_genai.runtime import native

    return native.bind(_INT8_KERNEL, {"genai_quantize_int8_rows": (c_int64, (c_void_p, c_int64, c_int64, c_void_p,
                                                                             c_void_p, c_void_p))})


def _quantize_int8_native(w, spec: FormatSpec, where: str) -> QuantizedWeight | None:
    """Per-channel int8 through the C kernel (one read of ``w`` from memory), or None where it does not apply:
    not contiguous fp32 on the CPU, or no compiled kernel. One thread: on the 2-core build VM, rows split over 2 threads
    were slower (four 5632x2048 matrices: 47 vs 36 ms, median of 15; writing the new codes' pages dominates), so more
    threads are left to a machine that shows a gain. Rows whose scale the kernel computed differently from
    :func:`compute_scales` would be redone here with torch (none has been: the same fp32 operations): same bits
    either way."""
    torch = _torch()
    if not (w.device.type == "cpu" and w.dtype == torch.float32 and w.is_contiguous()):
        return None
    lib = _int8_library()
    if lib is None:
        return None
    rows, cols = (int(s) for s in w.shape)
    amax = torch.empty(rows, dtype=torch.float32)
    scale = torch.empty(rows, dtype=torch.float32)
    out = torch.empty((rows, cols), dtype=torch.int8)
    bad = lib.genai_quantize_int8_rows(w.data_ptr(), rows, cols, amax.data_ptr(), scale.data_ptr(), out.data_ptr())
    if bad >= 0:
        raise _nonfinite(where)
    want = _scales_from_amax(amax, spec.qmax)
    differ = (want != scale).nonzero().flatten()
    if differ.numel():
        redo = _quantize_torch(w[differ], spec, None)
        out[differ], scale[differ] = redo.data, redo.scale.reshape(-1)
    return QuantizedWeight(spec, out, scale.unsqueeze(1), (rows, cols), None)


def quantize(w, fmt: str | FormatSpec, group_size: int | None = None, *, where: str = "weight",
             qmax: float | None = None) -> QuantizedWeight:
    """Quantize the 2-D float tensor ``w`` to ``fmt`` (see module docstring for the layout). Per-channel int8 of
    contiguous fp32 CPU weights runs through a small C kernel (``csrc/int8.c``) where one is compiled: the same
    codes and scales as the torch ops, with one read of the weight instead of three.

    ``qmax``: the value ``amax`` maps to, where a device's range is narrower than the format's
    (:func:`~pytest_genai.quant.formats.device_qmax`: fp8 e4m3 on Gaudi2 spans 240, not 448)."""
    spec = get_format(fmt)
    if qmax is not None and qmax != spec.qmax:
        if not spec.scaled or spec.kind != "float" or not 0 < qmax <= spec.qmax:
            raise ValueError(f"{where}: qmax={qmax!r} for {spec.name}: only a scaled float format takes a narrower "
                             f"range (0 < qmax <= {spec.qmax:g})")
        spec = dataclasses.replace(spec, qmax=float(qmax))
    _check_weight(w, where)
    spec.check_shape(tuple(w.shape), group_size, where=where)
    w = w.detach()
    if spec.name == "int8" and spec.qmax == 127 and spec.effective_group_size(group_size) is None:
        native = _quantize_int8_native(w, spec, where)
        if native is not None:
            return native
    return _quantize_torch(w, spec, group_size, where)


def _quantize_torch(w, spec: FormatSpec, group_size: int | None, where: str = "weight") -> QuantizedWeight:
    torch = _torch()
    rows, cols = (int(s) for s in w.shape)
    shape = (rows, cols)
    if not spec.scaled:
        row_amax = _row_amax(w, cols)
        _check_finite(row_amax, where)
        amax = float(row_amax.max())
        if spec.qmax is not None and amax > spec.qmax:  # fp16 range check
            raise ValueError(f"{where}: max |w| = {amax:g} overflows {spec.name} (max {spec.qmax:g}); use bf16 or "
                             "a scaled format")
        data = w.to(spec.storage_dtype(), copy=True).contiguous()
        return QuantizedWeight(spec, data, None, shape, None)

    g = spec.effective_group_size(group_size)
    gg = g or cols
    ngroups = cols // gg
    scale = compute_scales(w, spec, g, where)
    packed = spec.bits == 4
    out = torch.empty((rows, cols // 2 if packed else cols), dtype=spec.storage_dtype(), device=w.device)
    step = max(1, _CHUNK_ELEMENTS // cols)
    buf = torch.empty(min(rows, step) * cols, dtype=torch.float32, device=w.device)  # reused: stays in cache
    for a, b in _row_chunks(rows, cols):
        x = buf[: (b - a) * cols].view(b - a, ngroups, gg)
        torch.div(w[a:b].reshape(b - a, ngroups, gg), scale[a:b].unsqueeze(-1), out=x)
        if spec.kind == "int":
            x.round_()
        x.clamp_(-spec.qmax, spec.qmax)
        x = x.view(b - a, cols)
        if packed:
            codes = (x + 8.0).to(torch.uint8).view(b - a, cols // 2, 2)
            torch.bitwise_or(codes[..., 0], codes[..., 1] << 4, out=out[a:b])
        else:
            out[a:b].copy_(x)  # cast to int8 (exact: integral values) or float8 (round to nearest even)
    return QuantizedWeight(spec, out, scale, shape, g)


def unpack_int4(packed):
    """Signed int4 codes (int8, in [-8, 7]) from the packed uint8 layout, shape ``(rows, 2 * cols_packed)``."""
    torch = _torch()
    low = (packed & 0x0F).to(torch.int8) - 8
    high = (packed >> 4).to(torch.int8) - 8
    return torch.stack((low, high), dim=-1).reshape(packed.shape[0], packed.shape[1] * 2)


def codes(qw: QuantizedWeight):
    """The integer or fp8 codes of ``qw`` (int4 unpacked), without scales."""
    return unpack_int4(qw.data) if qw.spec.bits == 4 else qw.data


def codes_as(qw: QuantizedWeight, dtype):
    """The codes of ``qw`` widened to the float ``dtype`` (exact: every code is representable).

    fp8 on CPU goes through a 256-entry lookup table: torch's elementwise fp8 -> fp32 cast was
    measured ~2.5x slower than the table gather here."""
    torch = _torch()
    data = codes(qw)
    if data.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) and data.device.type == "cpu":
        table = torch.arange(256, dtype=torch.uint8).view(data.dtype).to(dtype)
        return torch.take(table, data.view(torch.uint8).long())
    return data.to(dtype)


def dequantize(qw: QuantizedWeight, dtype=None):
    """The matrix ``qw`` represents, as ``dtype`` (default fp32)."""
    torch = _torch()
    dtype = dtype or torch.float32
    if qw.scale is None:
        return qw.data.to(dtype)
    rows, cols = qw.data.shape[0], qw.shape[1]
    ngroups = qw.scale.shape[1]
    values = codes_as(qw, torch.float32).reshape(rows, ngroups, cols // ngroups)
    return (values * qw.scale.unsqueeze(-1)).reshape(rows, cols).to(dtype)


def fake_quantize(w, fmt: str | FormatSpec, group_size: int | None = None, *, where: str = "weight",
                  qmax: float | None = None):
    """``dequantize(quantize(w))`` in ``w``'s dtype: the paper's simulated ("fake") quantization."""
    return dequantize(quantize(w, fmt, group_size, where=where, qmax=qmax), w.dtype)


def error_bound(qw: QuantizedWeight, w):
    """Element-wise bound on ``|w - dequantize(qw)|`` that the format guarantees (see formats)."""
    torch = _torch()
    spec = qw.spec
    w = w.detach().to(torch.float32)
    if qw.scale is None:
        if spec.rel_error == 0.0:
            return torch.zeros_like(w)
        return torch.clamp(w.abs() * spec.rel_error, min=spec.subnormal_error)
    rows, cols = w.shape
    ngroups = qw.scale.shape[1]
    s = qw.scale.unsqueeze(-1).expand(rows, ngroups, cols // ngroups).reshape(rows, cols)
    if spec.kind == "int":
        return s / 2
    return torch.maximum(w.abs() * spec.rel_error, s * spec.subnormal_error)
