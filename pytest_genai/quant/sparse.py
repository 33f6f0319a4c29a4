"""Sparse storage of quantized weights: a bitmask of the nonzero codes plus the nonzero codes themselves.

Layout of a :class:`SparseWeight` (the "sparse-bitmask" layout of compressed-tensors, applied to the codes):

- ``mask`` uint8 ``(rows, ceil(cols / 8))``: bit ``j % 8`` (least significant first) of byte ``j // 8`` is set
  iff the code of column ``j`` is nonzero (bit pattern, so ``-0.0`` counts as a value and round-trips exactly);
- ``values``: the nonzero codes in row-major order, 1-D, in the format's storage dtype;
- ``scale``: the format's fp32 scales, unchanged.

Dense codes -> ``sparsify`` -> ``densify`` gives the same codes bit for bit, so the sparse model computes exactly
what the dense quantized model computes. Formats with 8- or 16-bit codes only (int4 packs two codes per byte).
Bytes are counted with and without the mask (``nbytes`` / ``nbytes_without_mask``); torch-free accounting in
:func:`sparse_stored_bytes`.

Semi-structured 2:4 sparsity (two nonzeros in every four, with hardware kernels) is a different pruning than the
paper's one global magnitude threshold; :func:`semi_structured_support` says whether this device has the kernels.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .formats import SCALE_BYTES, FormatSpec, get_format

SPARSE_LAYOUTS = ("bitmask",)


def _torch():
    import torch

    return torch


def mask_bytes(shape: tuple[int, int]) -> int:
    """Bytes of the bitmask of a ``(rows, cols)`` weight: one bit per weight, rows padded to whole bytes."""
    rows, cols = int(shape[0]), int(shape[1])
    return rows * ((cols + 7) // 8)


def sparse_stored_bytes(fmt: str | FormatSpec, shape: tuple[int, int], nonzeros: int, group_size: int | None = None, *,
                        count_mask: bool = True) -> int:
    """Bytes a ``shape`` weight with ``nonzeros`` nonzero codes takes in bitmask storage of ``fmt``:
    values (``bits / 8`` each) + fp32 scales (+ the mask when ``count_mask``)."""
    spec = get_format(fmt)
    if spec.bits not in (8, 16):
        raise ValueError(f"bitmask sparsity stores whole codes: format {spec.name!r} has {spec.bits}-bit codes; use an "
                         "8- or 16-bit format (int8, fp8_e4m3, fp8_e5m2, bf16, fp16)")
    rows, cols = int(shape[0]), int(shape[1])
    if not 0 <= nonzeros <= rows * cols:
        raise ValueError(f"nonzeros={nonzeros} is outside [0, {rows * cols}] for shape {(rows, cols)}")
    scale_bytes = 0
    if spec.scaled:
        g = spec.effective_group_size(group_size)
        scale_bytes = rows * (1 if g is None else cols // g) * SCALE_BYTES
    return nonzeros * spec.bits // 8 + scale_bytes + (mask_bytes(shape) if count_mask else 0)


def _int_view(data):
    """The codes' bit patterns as a same-width integer tensor (float8 -> uint8, 16-bit floats -> int16)."""
    torch = _torch()
    size = data.element_size()
    if size == 1:
        return data.view(torch.uint8) if data.dtype != torch.int8 else data
    if size == 2:
        return data.view(torch.int16)
    raise ValueError(f"bitmask sparsity stores 8- or 16-bit codes, got dtype {data.dtype}")


def pack_bitmask(mask):
    """Bool ``(rows, cols)`` -> uint8 ``(rows, ceil(cols / 8))``, column ``j`` in bit ``j % 8`` of byte ``j // 8``."""
    torch = _torch()
    rows, cols = mask.shape
    padded = torch.zeros((rows, (cols + 7) // 8 * 8), dtype=torch.uint8, device=mask.device)
    padded[:, :cols] = mask
    weights = (1 << torch.arange(8, dtype=torch.uint8, device=mask.device))
    return (padded.view(rows, -1, 8) * weights).sum(-1, dtype=torch.uint8)


def unpack_bitmask(packed, cols: int):
    """Inverse of :func:`pack_bitmask`: bool ``(rows, cols)``."""
    torch = _torch()
    shifts = torch.arange(8, dtype=torch.uint8, device=packed.device)
    bits = (packed.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(packed.shape[0], -1)[:, :cols].bool()


@dataclass
class SparseWeight:
    """A quantized weight in bitmask storage of ``spec``: ``values`` (nonzero codes), packed ``mask``, ``scale``."""

    spec: FormatSpec
    values: Any
    mask: Any
    scale: Any | None
    shape: tuple[int, int]
    group_size: int | None

    def __post_init__(self) -> None:
        self.spec = get_format(self.spec)

    @property
    def fmt(self) -> str:
        return self.spec.name

    @property
    def nonzeros(self) -> int:
        return int(self.values.numel())

    def mask_nbytes(self) -> int:
        return self.mask.numel() * self.mask.element_size()

    def nbytes_without_mask(self) -> int:
        n = self.values.numel() * self.values.element_size()
        if self.scale is not None:
            n += self.scale.numel() * self.scale.element_size()
        return n

    def nbytes(self) -> int:
        """Bytes held by ``values``, ``scale`` and ``mask``."""
        return self.nbytes_without_mask() + self.mask_nbytes()


def sparsify(qw) -> SparseWeight:
    """Bitmask storage of a :class:`~pytest_genai.quant.codecs.QuantizedWeight` (8- or 16-bit codes)."""
    if qw.spec.bits not in (8, 16):
        sparse_stored_bytes(qw.spec, qw.shape, 0)  # raises the one-line error naming the fix
    bits = _int_view(qw.data)
    nonzero = bits != 0
    values = bits.reshape(-1)[nonzero.reshape(-1)].view(qw.data.dtype)
    return SparseWeight(qw.spec, values, pack_bitmask(nonzero), qw.scale, tuple(qw.shape), qw.group_size)


_DENSIFY_KERNEL = Path(__file__).parent / "csrc" / "bitmask.c"


def _densify_library():
    """The compiled densify kernel with its C signature, or None (no C compiler, or disabled)."""
    from ctypes import c_int64, c_void_p

    from pytest_genai.runtime import native

    return native.bind(_DENSIFY_KERNEL, {"genai_densify_bitmask": (c_int64, (c_void_p, c_int64, c_int64, c_void_p,
                                                                             c_int64, c_int64, c_void_p))})


def _count_mismatch(sw: SparseWeight, set_bits: int | None = None) -> ValueError:
    if set_bits is None:
        has = f"more set bits than its {sw.nonzeros} stored codes"
    else:
        has = f"{set_bits} set bit{'' if set_bits == 1 else 's'} for its {sw.nonzeros} stored codes"
    return ValueError(f"bitmask weight of shape {tuple(sw.shape)}: the mask has {has} (mask and values from different "
                      "weights?); rebuild it from the dense codes with sparsify()")


def _densify_native(sw: SparseWeight, values_bits):
    """The dense code bits through the C kernel (``csrc/bitmask.c``: one read of the mask and the codes, each output
    byte written once), or None where it does not apply: not on the CPU, not contiguous, or no compiled kernel.
    The boolean-mask scatter it replaces took 3.9 ms for a 1536x576 int8 weight, more than the layer's matmul over
    512 tokens (3.2 ms); a real-mode forward densifies every pruned layer."""
    torch = _torch()
    mask = sw.mask
    rows, cols = sw.shape
    if not (mask.device.type == "cpu" and values_bits.device.type == "cpu" and mask.dtype == torch.uint8
            and mask.is_contiguous() and values_bits.is_contiguous() and tuple(mask.shape) == (rows, (cols + 7) // 8)):
        return None
    lib = _densify_library()
    if lib is None:
        return None
    out = torch.empty((rows, cols), dtype=values_bits.dtype)
    placed = lib.genai_densify_bitmask(mask.data_ptr(), rows, cols, values_bits.data_ptr(), values_bits.numel(),
                                       values_bits.element_size(), out.data_ptr())
    if placed != values_bits.numel():
        raise _count_mismatch(sw, None if placed < 0 else placed)
    return out


def densify(sw: SparseWeight):
    """The dense :class:`~pytest_genai.quant.codecs.QuantizedWeight` of ``sw`` (same codes, bit for bit). On the
    CPU through a small C kernel where one is compiled; torch ops elsewhere (same bits)."""
    from .codecs import QuantizedWeight

    rows, cols = sw.shape
    values_bits = _int_view(sw.values)
    dense_bits = _densify_native(sw, values_bits)
    if dense_bits is None:
        dense_bits = _densify_torch(sw, values_bits)
    data = dense_bits.view(sw.values.dtype).reshape(rows, cols)
    return QuantizedWeight(sw.spec, data, sw.scale, (rows, cols), sw.group_size)


def _densify_torch(sw: SparseWeight, values_bits):
    """The dense code bits, flat, with torch ops (any device)."""
    torch = _torch()
    rows, cols = sw.shape
    set_mask = unpack_bitmask(sw.mask, cols).reshape(-1)
    set_bits = int(set_mask.sum())
    if set_bits != values_bits.numel():
        raise _count_mismatch(sw, set_bits)
    dense_bits = torch.zeros(rows * cols, dtype=values_bits.dtype, device=values_bits.device)
    dense_bits[set_mask] = values_bits
    return dense_bits


def semi_structured_support(device) -> str | None:
    """None if torch has 2:4 semi-structured sparse kernels on ``device``, else the reason (recorded in reports)."""
    torch = _torch()
    dev = torch.device(device)
    if dev.type != "cuda":
        return (f"2:4 semi-structured sparse matmul (torch.sparse.to_sparse_semi_structured: CUTLASS / cuSPARSELt "
                f"kernels) runs on CUDA compute capability 8.0+ only; this device is {dev.type}")
    major, minor = torch.cuda.get_device_capability(dev)
    if major < 8:
        return f"2:4 semi-structured sparse kernels need CUDA compute capability 8.0+, this GPU is {major}.{minor}"
    return None
