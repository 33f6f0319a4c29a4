"""Modules that *store* weights in a low-precision format and compute from them ("real" mode).

``QuantLinear`` keeps ``qweight`` (int8 / packed-int4 uint8 / float8 / fp16 / bf16) and, for
scaled formats, an fp32 ``scale``; the bias stays as it was. Forward computes from the stored codes:

- one scale per output channel (int8, fp8 by default): ``(x @ codes^T) * scale`` - the codes are
  widened to the activation dtype, the matmul runs, and the output columns are scaled (the
  weight-only scheme torchao uses). ``torch._weight_int8pack_mm`` was measured 20-80x slower than
  this on the CPU build used here (1-512 tokens, 576x1536), so it is not used.
- per-group scales (int4, or a plan with ``group_size``): dequantize, then ``F.linear``.
- fp16 / bf16: widen, then ``F.linear``.

fp8 here is weight-only storage. FP8 *compute* (W8A8: activations quantized too, ``torch._scaled_mm``) is a
different method with its own backend, ``fp8_w8a8`` (:mod:`pytest_genai.quant.fp8`).
``SparseQuantLinear`` stores the codes as a bitmask + nonzero codes (prune-then-quantize, ``sparse="bitmask"``).

This module imports torch: import it only from code that already needs torch.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .codecs import QuantizedWeight, codes_as, dequantize, quantize
from .formats import FormatSpec, get_format
from .sparse import SparseWeight, densify, mask_bytes, sparse_stored_bytes, sparsify


def _empty_qweight(spec: FormatSpec, shape, group_size, device):
    rows, cols = shape
    data_cols = cols // 2 if spec.bits == 4 else cols
    data = torch.empty((rows, data_cols), dtype=spec.storage_dtype(), device=device)
    scale = None
    if spec.scaled:
        g = spec.effective_group_size(group_size) or cols
        scale = torch.empty((rows, cols // g), dtype=torch.float32, device=device)
    return data, scale


class StoredCodes(nn.Module):
    """Stored codes and scales keep their dtypes through ``.to(dtype)``, ``.half()``, ``.bfloat16()``, ``.float()``:
    torch treats float8 codes and fp32 scales as floating point and cast them with the model (fp8 codes widened to
    bf16 doubled the bytes, bf16 scales lost precision, fp16 ones underflowed, ``.float()`` undid bf16 storage). The
    buffers move with the module (device, shared memory) as raw bytes; parameters (the bias) follow as usual, and
    ``activation_dtype`` (what forward will see) follows the cast. ``spec``: the stored format."""

    @property
    def fmt(self) -> str:
        return self.spec.name

    def _apply(self, fn, recurse=True):
        # the stored tensors move as raw bytes (fn casts no integer tensor); nn.Module's _apply sees them as None
        stored = {n: fn(b.view(torch.uint8)).view(b.dtype) for n, b in self._buffers.items()
                  if b is not None and b.dim() > 0}
        self._buffers.update(dict.fromkeys(stored))
        try:
            super()._apply(fn, recurse)
        finally:
            self._buffers.update(stored)
        dtype = getattr(self, "activation_dtype", None)
        if dtype is not None:
            self.activation_dtype = fn(torch.empty(0, dtype=dtype)).dtype
        return self


class _QuantStore(StoredCodes):
    """Shared buffer handling: ``qweight`` (+ ``scale``) registered as buffers, saved in the state dict."""

    def _init_store(self, fmt: str | FormatSpec, shape, group_size, data, scale, device) -> None:
        self.spec = get_format(fmt)
        if data is None:
            data, scale = _empty_qweight(self.spec, shape, group_size, device)
        self.group_size = self.spec.effective_group_size(group_size)
        self.weight_shape = (int(shape[0]), int(shape[1]))
        self.register_buffer("qweight", data)
        if scale is not None:
            self.register_buffer("scale", scale)
        else:
            self.scale = None

    def quantized_weight(self) -> QuantizedWeight:
        return QuantizedWeight(self.spec, self.qweight, self.scale, self.weight_shape, self.group_size)

    def dequantized_weight(self, dtype=None):
        return dequantize(self.quantized_weight(), dtype)


class QuantLinear(_QuantStore):
    """A linear layer whose weight is stored in ``fmt`` (see module docstring)."""

    def __init__(self, in_features: int, out_features: int, fmt: str | FormatSpec, group_size=None, bias: bool = True,
                 device=None, *, qweight=None, scale=None, bias_tensor=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self._init_store(fmt, (out_features, in_features), group_size, qweight, scale, device)
        self._init_bias(bias, bias_tensor, device)
        self.activation_dtype = None  # the replaced layer's dtype (from_linear), which compute_path reports for

    def _init_bias(self, bias: bool, bias_tensor, device) -> None:
        if bias_tensor is not None:
            self.bias = bias_tensor if isinstance(bias_tensor, nn.Parameter) else nn.Parameter(bias_tensor, False)
        elif bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, device=device), requires_grad=False)
        else:
            self.register_parameter("bias", None)

    @classmethod
    def from_linear(cls, linear: nn.Linear, fmt: str | FormatSpec, group_size=None, *, where: str = "linear",
                    qmax: float | None = None) -> "QuantLinear":
        qw = quantize(linear.weight, fmt, group_size, where=where, qmax=qmax)
        layer = cls(linear.in_features, linear.out_features, qw.spec, group_size, bias=linear.bias is not None,
                    qweight=qw.data, scale=qw.scale, bias_tensor=linear.bias)
        layer.activation_dtype = linear.weight.dtype
        return layer

    def _scales_outputs(self, dtype) -> bool:
        """Per-row scales are applied to the outputs, except in fp16: ``x @ codes`` is the output divided by the
        scale (x127 for int8, up to x448 for e4m3) and passes fp16's 65504 where the output does not."""
        return self.scale is not None and self.scale.shape[1] == 1 and dtype != torch.float16

    def forward(self, x):
        bias = None if self.bias is None else self.bias.to(x.dtype)
        if self._scales_outputs(x.dtype):  # per output channel: scale the outputs
            y = F.linear(x, codes_as(self.quantized_weight(), x.dtype)) * self.scale.reshape(-1).to(x.dtype)
            return y if bias is None else y + bias
        return F.linear(x, self.dequantized_weight(x.dtype), bias)

    @property
    def compute_path(self) -> str:
        """What forward runs for the replaced layer's dtype: ``weight_only_<fmt>_scaled_output`` (codes widened,
        outputs scaled per row) or ``weight_only_<fmt>_dequant`` (dequantize, then ``F.linear``; grouped scales, and
        fp16 activations); recorded per layer in ``QuantInfo``."""
        per_row = self._scales_outputs(getattr(self, "activation_dtype", None))
        return f"weight_only_{self.fmt}_{'scaled_output' if per_row else 'dequant'}"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, fmt={self.fmt}, "
                f"group_size={self.group_size}, bias={self.bias is not None}")


class SparseQuantLinear(QuantLinear):
    """A ``QuantLinear`` whose codes are stored as a bitmask + the nonzero codes (:mod:`pytest_genai.quant.sparse`):
    buffers ``qvalues`` (1-D), ``mask`` (packed bits) and ``scale``. Forward rebuilds the dense codes (bit for bit)
    and computes as ``QuantLinear`` does, so the output equals the dense quantized layer's."""

    def __init__(self, in_features: int, out_features: int, fmt: str | FormatSpec, group_size=None, bias: bool = True,
                 device=None, *, nonzeros: int = 0, sparse=None, bias_tensor=None):
        nn.Module.__init__(self)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.spec = spec = get_format(fmt)
        if sparse is None:
            values = torch.empty(int(nonzeros), dtype=spec.storage_dtype(), device=device)
            _, scale = _empty_qweight(spec, (out_features, in_features), group_size, device)
            mask = torch.empty(mask_bytes((out_features, in_features)), dtype=torch.uint8, device=device)
            mask = mask.view(out_features, -1)
        else:
            values, mask, scale = sparse.values, sparse.mask, sparse.scale
        self.group_size = spec.effective_group_size(group_size)
        self.weight_shape = (self.out_features, self.in_features)
        self.register_buffer("qvalues", values)
        self.register_buffer("mask", mask)
        if scale is not None:
            self.register_buffer("scale", scale)
        else:
            self.scale = None
        self._init_bias(bias, bias_tensor, device)
        self.activation_dtype = None

    @classmethod
    def from_linear(cls, linear: nn.Linear, fmt: str | FormatSpec, group_size=None, *, where: str = "linear",
                    qmax: float | None = None):
        spec = get_format(fmt)
        sparse_stored_bytes(spec, tuple(linear.weight.shape), 0)  # rejects int4 / fp32 with the fix named
        sw = sparsify(quantize(linear.weight, spec, group_size, where=where, qmax=qmax))
        layer = cls(linear.in_features, linear.out_features, sw.spec, group_size, bias=linear.bias is not None,
                    sparse=sw, bias_tensor=linear.bias)
        layer.activation_dtype = linear.weight.dtype
        return layer

    def sparse_weight(self):
        return SparseWeight(self.spec, self.qvalues, self.mask, self.scale, self.weight_shape, self.group_size)

    def quantized_weight(self) -> QuantizedWeight:
        return densify(self.sparse_weight())

    @property
    def compute_path(self) -> str:
        return "bitmask_densify_" + super().compute_path


class QuantEmbedding(_QuantStore):
    """An embedding table stored in ``fmt``; a lookup dequantizes only the gathered rows."""

    def __init__(self, num_embeddings: int, embedding_dim: int, fmt: str | FormatSpec, group_size=None,
                 padding_idx=None, device=None, *, qweight=None, scale=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = padding_idx
        self._init_store(fmt, (num_embeddings, embedding_dim), group_size, qweight, scale, device)
        self.activation_dtype = None  # the replaced table's dtype: what the lookup returns (None: fp32)

    @classmethod
    def from_embedding(cls, emb: nn.Embedding, fmt: str | FormatSpec, group_size=None, *, where: str = "embedding",
                       qmax: float | None = None):
        qw = quantize(emb.weight, fmt, group_size, where=where, qmax=qmax)
        layer = cls(emb.num_embeddings, emb.embedding_dim, qw.spec, group_size, emb.padding_idx,
                    qweight=qw.data, scale=qw.scale)
        layer.activation_dtype = emb.weight.dtype  # a bf16 model's lookups stay bf16 (they were always fp32)
        return layer

    def forward(self, ids):
        flat = ids.reshape(-1)
        rows = self.quantized_weight().select_rows(flat)
        out = dequantize(rows, self.activation_dtype or torch.float32)
        return out.reshape(*ids.shape, self.embedding_dim)
