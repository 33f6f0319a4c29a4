"""FP8 *compute* (W8A8): weights stored as float8 e4m3 with one fp32 scale per output row, activations quantized
to e4m3 dynamically (one scale per token), and the matmul run by ``torch._scaled_mm`` in FP8.

This is a different method from the weight-only ``fp8_e4m3`` storage of :class:`~pytest_genai.quant.modules.
QuantLinear` (which widens the codes and multiplies in the activation dtype): it also rounds the activations, and
on Hopper (sm_89+) it runs on the FP8 tensor cores. Backend name ``fp8_w8a8`` (``quantize_model``); on Gaudi the
same backend is Intel Neural Compressor's FP8 (measure then quantize), see ``backends.inc_fp8``.

``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype)`` computes ``(a * scale_a) @ (b * scale_b)`` with ``a`` (M, K)
row-major fp8, ``b`` (K, N) column-major fp8, ``scale_a`` (M, 1) and ``scale_b`` (1, N) fp32 (row-wise scaling).
The CPU build of torch 2.13 runs it too (checked at run time by :func:`fp8_compute_support`); on CUDA it needs
compute capability >= 8.9, K and N multiples of 16 and (row-wise scales) a bf16 output.

This module imports torch: import it only from code that already needs torch.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .codecs import QuantizedWeight, dequantize, quantize, round_scale_up
from .modules import StoredCodes

E4M3_MAX = 448.0
#: compute path names recorded per layer (``QuantInfo.compute_paths``)
PATH_SCALED_MM = "fp8_w8a8_scaled_mm"
PATH_FALLBACK = "fp8_weight_only_dequant"  # a layer _scaled_mm cannot take (shape): weight-only, recorded
PATH_INC = "inc_fp8"


def _probe_scaled_mm(device, *, tensorwise: bool = False) -> str | None:
    """None if ``torch._scaled_mm`` runs a 16x16 e4m3 product on ``device`` with row-wise scales (or, with
    ``tensorwise``, one-element scales), else why not."""
    try:
        a = torch.ones((16, 16), device=device).to(torch.float8_e4m3fn)
        b = torch.ones((16, 16), device=device).to(torch.float8_e4m3fn).t()
        s_a = torch.ones((1,) if tensorwise else (16, 1), device=device)
        s_b = torch.ones((1,) if tensorwise else (1, 16), device=device)
        out_dtype = torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
        y = torch._scaled_mm(a, b, scale_a=s_a, scale_b=s_b, out_dtype=out_dtype)
        if float(y.float()[0, 0]) != 16.0:
            return f"torch._scaled_mm on {device} returned {float(y.float()[0, 0])} for a 16-term sum of ones"
    except Exception as exc:  # RuntimeError / NotImplementedError / AttributeError on builds without it
        return f"torch._scaled_mm does not run on {device} ({type(exc).__name__}: {str(exc).splitlines()[0]})"
    return None


def fp8_compute_support(device) -> str | None:
    """None if this suite can compute in FP8 on ``device`` (a torch device or its type), else the reason.

    cpu: ``torch._scaled_mm`` probed; cuda: compute capability >= 8.9 (Ada / Hopper FP8 tensor cores) and the probe;
    hpu: Intel Neural Compressor FP8 (``backends.inc_fp8``, reported by ``backends.inc_fp8_available``).
    """
    kind = torch.device(device).type
    if kind == "cuda":
        major, minor = torch.cuda.get_device_capability(torch.device(device))
        if (major, minor) < (8, 9):
            return (f"CUDA compute capability {major}.{minor} has no FP8 tensor cores (needs 8.9+: L4/L40/H100/H200); "
                    "use the weight-only fp8 format (backend='native') on this GPU")
        return _probe_scaled_mm(device)
    if kind == "cpu":
        return _probe_scaled_mm(device)
    return f"FP8 compute through torch._scaled_mm is not wired for device type {kind!r} (Gaudi: backend 'fp8_w8a8' uses INC)"


def quantize_activations(x):
    """``(codes e4m3 (M, K), scale fp32 (M, 1))`` for a 2-D activation: one scale per row (token), amax / 448."""
    amax = x.detach().abs().amax(dim=-1, keepdim=True).float()
    scale = round_scale_up(torch.clamp(amax, min=1e-12) / E4M3_MAX)
    codes = (x.float() / scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return codes, scale


def shape_fits_scaled_mm(in_features: int, out_features: int, device_type: str) -> bool:
    """Whether ``_scaled_mm`` takes this layer: CUDA needs K and N multiples of 16 (CPU takes any shape)."""
    return device_type != "cuda" or (in_features % 16 == 0 and out_features % 16 == 0)


class Fp8Linear(StoredCodes):
    """A linear layer computing in FP8 (W8A8): ``y = scaled_mm(q(x), qweight^T) + bias`` (see module docstring).

    ``qweight`` float8 e4m3 (out, in) and ``scale`` fp32 (out, 1): the same stored bytes as weight-only
    ``fp8_e4m3``. ``compute_path`` says what the forward runs (``fp8_w8a8_scaled_mm``, or the weight-only
    ``fp8_weight_only_dequant`` for a shape the kernel does not take on this device).
    """

    def __init__(self, qw: QuantizedWeight, bias=None):
        super().__init__()
        if qw.fmt != "fp8_e4m3" or qw.scale is None or qw.scale.shape[1] != 1:
            raise ValueError(f"Fp8Linear: needs fp8_e4m3 codes with one scale per output row, got {qw.fmt} "
                             f"with scale shape {None if qw.scale is None else tuple(qw.scale.shape)}; "
                             "use a plan without group_size for FP8 compute")
        self.out_features, self.in_features = qw.shape
        self.spec = qw.spec
        self.group_size = None
        self.weight_shape = tuple(qw.shape)
        self.register_buffer("qweight", qw.data)
        self.register_buffer("scale", qw.scale)
        self.bias = bias if bias is None or isinstance(bias, nn.Parameter) else nn.Parameter(bias, False)
        fits = shape_fits_scaled_mm(self.in_features, self.out_features, qw.data.device.type)
        self.compute_path = PATH_SCALED_MM if fits else PATH_FALLBACK

    def _apply(self, fn, recurse=True):
        """As :class:`StoredCodes` (codes and scale keep their dtypes); the compute path follows the device the
        layer moved to (a layer quantized on the CPU, then moved to CUDA with K or N not a multiple of 16, kept
        ``_scaled_mm``, which raises there)."""
        super()._apply(fn, recurse)
        if self.compute_path in (PATH_SCALED_MM, PATH_FALLBACK):
            fits = shape_fits_scaled_mm(self.in_features, self.out_features, self.qweight.device.type)
            self.compute_path = PATH_SCALED_MM if fits else PATH_FALLBACK
        return self

    @classmethod
    def from_linear(cls, linear: nn.Linear, *, where: str = "linear") -> "Fp8Linear":
        return cls(quantize(linear.weight, "fp8_e4m3", None, where=where), linear.bias)

    def quantized_weight(self) -> QuantizedWeight:
        return QuantizedWeight(self.spec, self.qweight, self.scale, self.weight_shape, None)

    def forward(self, x):
        if self.compute_path != PATH_SCALED_MM:
            return F.linear(x, dequantize(self.quantized_weight(), x.dtype), self.bias)
        lead = x.shape[:-1]
        codes, x_scale = quantize_activations(x.reshape(-1, self.in_features))
        out_dtype = torch.bfloat16 if x.device.type == "cuda" else x.dtype
        y = torch._scaled_mm(codes, self.qweight.t(), scale_a=x_scale, scale_b=self.scale.reshape(1, -1),
                             out_dtype=out_dtype).to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, fmt=fp8_e4m3 (W8A8), "
                f"compute_path={self.compute_path}, bias={self.bias is not None}")


def w8a8_reference(x, qw: QuantizedWeight, bias=None):
    """What ``Fp8Linear`` computes, in float64 from the dequantized activations and weights (the numerics test)."""
    codes, x_scale = quantize_activations(x.reshape(-1, qw.shape[1]))
    xd = codes.to(torch.float64) * x_scale.to(torch.float64)
    wd = dequantize(qw, torch.float64)
    y = xd @ wd.t()
    if bias is not None:
        y = y + bias.to(torch.float64)
    return y.reshape(*x.shape[:-1], qw.shape[0])


def e4m3_tensor_scale(amax) -> torch.Tensor:
    """A per-tensor scale as ``_scaled_mm`` takes it (tensorwise: one fp32 element): amax / 448, never zero."""
    amax = torch.as_tensor(amax, dtype=torch.float32).reshape(())
    return (torch.clamp(amax, min=1e-12) / E4M3_MAX).reshape(1)


class StaticFp8Linear(nn.Module):
    """FP8 compute with static per-tensor scales: ``y = _scaled_mm(q(x / s_x), q(W / s_w)^T, s_x, s_w) + b``.

    ``s_w`` = the weight's amax / 448 and ``s_x`` = the activation amax measured once on calibration tokens / 448
    (:func:`pytest_genai.quant.kernels.apply_kernel`): a forward quantizes its input with one divide, a clamp and a
    cast, and measures nothing per call, unlike :class:`Fp8Linear`'s per-token scales. Inputs beyond the calibrated
    amax saturate at +-448.
    """

    kernel = "torch._scaled_mm.fp8_e4m3.tensorwise_static"

    def __init__(self, weight, bias, x_amax):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        w_scale = e4m3_tensor_scale(weight.detach().abs().amax())
        codes = (weight.detach().float() / w_scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
        self.register_buffer("qweight", codes)
        self.register_buffer("w_scale", w_scale.to(weight.device))
        self.register_buffer("x_scale", e4m3_tensor_scale(x_amax).to(weight.device))
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)

    @classmethod
    def from_linear(cls, linear: nn.Linear, x_amax) -> "StaticFp8Linear":
        return cls(linear.weight, linear.bias, x_amax)

    def forward(self, x):
        lead = x.shape[:-1]
        codes = (x.reshape(-1, self.in_features).float() / self.x_scale).clamp_(-E4M3_MAX, E4M3_MAX)
        # CUDA writes bf16 (what Fp8Linear's probe checked there); the CPU writes the input's dtype
        out_dtype = torch.bfloat16 if x.device.type == "cuda" else x.dtype
        y = torch._scaled_mm(codes.to(torch.float8_e4m3fn), self.qweight.t(), scale_a=self.x_scale,
                             scale_b=self.w_scale, out_dtype=out_dtype).to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, kernel={self.kernel}, "
                f"x_scale={float(self.x_scale):.3g}, w_scale={float(self.w_scale):.3g}")
