"""Weight storage formats as data: bits, scale layout and the bytes a weight matrix takes.

Torch-free on purpose: the precision plan predicts its compression ratio from these numbers
alone, and :mod:`pytest_genai.quant.codecs` produces tensors whose storage matches them byte for
byte (a property pinned by the tests).

Error bounds (element-wise, ``s`` = the scale of the element's row or group, ``w`` the weight):

- ``fp32``: exact.
- ``fp16``: round to nearest, 10 stored mantissa bits -> ``|w - dq| <= 2**-11 * |w|`` for
  normal values, ``<= 2**-25`` absolute in the subnormal range; ``|w| > 65504`` overflows (rejected).
- ``bf16``: 7 stored mantissa bits -> ``|w - dq| <= 2**-8 * |w|`` (fp32 range, no overflow).
- ``int8``: symmetric, ``s = amax / 127`` per output channel (or per group of ``group_size``
  input columns), ``q = clamp(round(w / s), -127, 127)`` -> ``|w - dq| <= s / 2``.
- ``int4``: symmetric per group (default 32 columns), ``s = amax / 7``, codes in [-7, 7] packed two
  per byte -> ``|w - dq| <= s / 2``.
- ``fp8_e4m3``: ``s = amax / 448``, ``w / s`` cast to ``torch.float8_e4m3fn`` (3 mantissa bits)
  -> ``|w - dq| <= 2**-4 * |w|`` for normals, ``<= 2**-10 * s`` in the subnormal range.
- ``fp8_e5m2``: ``s = amax / 57344``, cast to ``torch.float8_e5m2`` (2 mantissa bits)
  -> ``|w - dq| <= 2**-3 * |w|`` for normals, ``<= 2**-17 * s`` in the subnormal range.

Scales are stored as fp32, rounded *up* to 16 significant bits so that quantizing a dequantized
tensor again gives the identical codes and scales (exact idempotence).
"""
from __future__ import annotations

from dataclasses import dataclass

SCALE_BYTES = 4  # scales are stored as fp32


@dataclass(frozen=True)
class FormatSpec:
    """One weight format: ``name``, value ``bits`` and how it is scaled.

    ``scaled``: whether a per-row / per-group fp32 scale is stored; ``qmax``: the largest code
    (integers) or the largest finite value (fp8) that ``amax`` maps to; ``default_group_size``:
    the group used when the plan gives none (``None`` = one scale per output channel).
    """

    name: str
    bits: int
    kind: str  # "float" or "int"
    scaled: bool
    dtype: str  # the torch dtype of the stored codes, by its torch attribute name
    qmax: float | None = None
    default_group_size: int | None = None
    rel_error: float | None = None  # relative bound for normal values (float formats)
    subnormal_error: float | None = None  # bound below the normal range: absolute, or times the scale if scaled
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("float", "int"):
            raise ValueError(f"FormatSpec.kind={self.kind!r}: use 'float' or 'int'")
        if self.bits not in (4, 8, 16, 32):
            raise ValueError(f"FormatSpec.bits={self.bits}: use 4, 8, 16 or 32")

    def storage_dtype(self):
        """The torch dtype the stored codes have in this format."""
        import torch

        return getattr(torch, self.dtype)

    def effective_group_size(self, group_size: int | None) -> int | None:
        """The group size this format uses when the plan asks for ``group_size``."""
        if not self.scaled:
            return None
        return group_size if group_size is not None else self.default_group_size

    def check_shape(self, shape: tuple[int, int], group_size: int | None, *, where: str = "weight") -> None:
        """Raise ValueError (naming ``where`` and the fix) if ``shape`` cannot use this format."""
        if len(shape) != 2 or shape[0] <= 0 or shape[1] <= 0:
            raise ValueError(f"{where}: shape {tuple(shape)} is not a non-empty 2-D weight matrix")
        g = self.effective_group_size(group_size)
        cols = shape[1]
        if g is not None:
            if g <= 0:
                raise ValueError(f"{where}: group_size={g} must be a positive integer")
            if cols % g:
                divisors = [d for d in (16, 32, 64, 128, 256) if cols % d == 0]
                raise ValueError(
                    f"{where}: group_size={g} does not divide in_features={cols} for format "
                    f"{self.name!r}; use one of {divisors or 'a divisor of in_features'}"
                )
        if self.bits == 4 and cols % 2:
            raise ValueError(f"{where}: int4 packs two codes per byte and needs an even in_features, got {cols}")

    def stored_bytes(self, shape: tuple[int, int], group_size: int | None = None) -> int:
        """Bytes a ``shape`` weight takes in this format: packed values plus fp32 scales."""
        rows, cols = int(shape[0]), int(shape[1])
        value_bytes = rows * cols * self.bits // 8
        if not self.scaled:
            return value_bytes
        g = self.effective_group_size(group_size)
        groups_per_row = 1 if g is None else cols // g
        return value_bytes + rows * groups_per_row * SCALE_BYTES


FORMATS: dict[str, FormatSpec] = {
    f.name: f
    for f in (
        FormatSpec("fp32", 32, "float", scaled=False, dtype="float32", rel_error=0.0, doc="IEEE single, unchanged"),
        FormatSpec("fp16", 16, "float", scaled=False, dtype="float16", qmax=65504.0, rel_error=2.0**-11,
                   subnormal_error=2.0**-25, doc="IEEE half"),
        FormatSpec("bf16", 16, "float", scaled=False, dtype="bfloat16", rel_error=2.0**-8, subnormal_error=2.0**-134,
                   doc="bfloat16"),
        FormatSpec("int8", 8, "int", scaled=True, dtype="int8", qmax=127.0,
                   doc="symmetric int8, per-channel or per-group"),
        FormatSpec("int4", 4, "int", scaled=True, dtype="uint8", qmax=7.0, default_group_size=32,
                   doc="symmetric int4, per-group, packed two per byte"),
        FormatSpec("fp8_e4m3", 8, "float", scaled=True, dtype="float8_e4m3fn", qmax=448.0, rel_error=2.0**-4,
                   subnormal_error=2.0**-10, doc="float8 e4m3fn with fp32 scales"),
        FormatSpec("fp8_e5m2", 8, "float", scaled=True, dtype="float8_e5m2", qmax=57344.0, rel_error=2.0**-3,
                   subnormal_error=2.0**-17, doc="float8 e5m2 with fp32 scales"),
    )
}


#: fp8 e4m3's largest finite value where a device generation's hardware does not span the OCP ``float8_e4m3fn``
#: range (448): Gaudi2 computes e4m3 with the exponent bias of ``float8_e4m3fnuz``, so its full scale is 240 (Intel
#: Neural Compressor, ``fp8_quant/_core/fp_utils.py``, ``get_fullscale``: GAUDI2 with float8_e4m3fn takes
#: ``torch.finfo(torch.float8_e4m3fnuz).max``; Gaudi3 and NVIDIA H100/H200 keep 448). Codes scaled to 448 overflow
#: Gaudi2's range, so weights quantized for it are scaled to 240; on the 240 grid both encodings hold the same values.
FP8_E4M3_MAX_BY_GENERATION = {"gaudi2": 240.0}


def fp8_e4m3_max(generation: str | None = None) -> float:
    """The value ``amax`` maps to for fp8_e4m3 on ``generation`` (None or any other: the OCP range, 448)."""
    return FP8_E4M3_MAX_BY_GENERATION.get(generation or "", FORMATS["fp8_e4m3"].qmax)


def device_qmax(fmt: str | FormatSpec, generation: str | None) -> float | None:
    """The code range ``fmt`` takes on ``generation`` where it differs from the format's own, else None."""
    spec = get_format(fmt)
    if spec.name != "fp8_e4m3":
        return None
    qmax = fp8_e4m3_max(generation)
    return None if qmax == spec.qmax else qmax


def get_format(name: str | FormatSpec) -> FormatSpec:
    """The FormatSpec called ``name`` (a FormatSpec passes through); ValueError listing the known names otherwise."""
    if isinstance(name, FormatSpec):
        return name
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown weight format {name!r}; known formats: {sorted(FORMATS)}") from None
