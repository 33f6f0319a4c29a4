"""The device's own low-precision kernels for real-quantized throughput: which one runs, and applying it.

The suite's real mode (:mod:`.modules`) stores codes and widens them on every forward: what its rows time is that
path, not what the hardware's int8 / fp8 kernels give. This module picks, per device and format, the fastest path
available and names it (``KernelChoice.kernel``, recorded on the row as config):

- int8 weight-only: torchao's ``Int8WeightOnlyConfig`` through ``quantize_`` (per output row), under
  ``torch.compile`` where compiling is enabled (on CUDA inductor fuses the int8 widening into the matmul);
- fp8 e4m3 (W8A8): ``torch._scaled_mm`` with static per-tensor scales (the weight's amax and the activation amax
  measured once on calibration tokens, both / 448), cuBLASLt's FP8 GEMM on CUDA compute capability >= 8.9; the CPU
  build runs the same operator (emulated in fp32 where the CPU has no AMX);
- otherwise the suite's own dequantize-on-the-fly path (``KERNEL_NATIVE``).

``select_kernel`` is pure (a :class:`KernelCaps` in, a choice out) so the rules are testable without the device;
:func:`probe_caps` fills the capabilities from the running process. Imports torch only inside functions.
"""
from __future__ import annotations

from dataclasses import dataclass

KERNEL_TORCHAO_INT8_COMPILE = "torchao.int8_weight_only+compile"
KERNEL_TORCHAO_INT8 = "torchao.int8_weight_only"
KERNEL_SCALED_MM_FP8 = "torch._scaled_mm.fp8_e4m3.tensorwise_static"
KERNEL_NATIVE = "pytest-genai.dequant"
FORMATS = ("int8", "fp8_e4m3")
#: FP8 tensor cores: Ada (8.9) and Hopper (9.0) on; below them cuBLASLt has no FP8 GEMM
FP8_MIN_CAPABILITY = (8, 9)


@dataclass(frozen=True)
class KernelCaps:
    """What the device and this process offer: ``kind`` (cpu / cuda / hpu), the CUDA compute capability, whether
    torchao imports, whether ``torch._scaled_mm`` ran a probe product there, and whether to ``torch.compile``."""

    kind: str
    capability: tuple[int, int] | None = None
    torchao: bool = False
    scaled_mm: bool = False
    compile: bool = False

    def __post_init__(self) -> None:
        if self.kind == "cuda" and self.capability is None:
            raise ValueError("KernelCaps(kind='cuda') needs capability=(major, minor), e.g. (9, 0) for H100")


@dataclass(frozen=True)
class KernelChoice:
    """The kernel one format runs on one device, and why that one."""

    fmt: str
    kernel: str
    reason: str

    @property
    def native(self) -> bool:
        return self.kernel == KERNEL_NATIVE


def select_kernel(fmt: str, caps: KernelCaps) -> KernelChoice:
    """The fastest available kernel for ``fmt`` under ``caps`` (the rules in the module docstring)."""
    if fmt not in FORMATS:
        raise ValueError(f"select_kernel: fmt={fmt!r}; use one of {FORMATS}")
    if fmt == "int8":
        if not caps.torchao:
            return KernelChoice(fmt, KERNEL_NATIVE, "torchao is not importable (pip install torchao)")
        if caps.compile:
            return KernelChoice(fmt, KERNEL_TORCHAO_INT8_COMPILE, f"torchao int8 weight-only, compiled on {caps.kind}")
        return KernelChoice(fmt, KERNEL_TORCHAO_INT8, f"torchao int8 weight-only, eager on {caps.kind}")
    if caps.kind == "cuda" and tuple(caps.capability) < FP8_MIN_CAPABILITY:
        major, minor = caps.capability
        return KernelChoice(fmt, KERNEL_NATIVE, f"compute capability {major}.{minor} has no FP8 tensor cores "
                                                "(needs 8.9+)")
    if caps.kind not in ("cuda", "cpu"):
        return KernelChoice(fmt, KERNEL_NATIVE, f"torch._scaled_mm is not wired for {caps.kind!r}")
    if not caps.scaled_mm:
        return KernelChoice(fmt, KERNEL_NATIVE, f"torch._scaled_mm did not run a probe product on {caps.kind}")
    return KernelChoice(fmt, KERNEL_SCALED_MM_FP8, f"torch._scaled_mm, static per-tensor scales, on {caps.kind}")


def default_compile(kind: str) -> bool:
    """Compile where it pays: CUDA (inductor fuses the int8 widening into the GEMM). On the CPU eager torchao is
    used: compiling one TinyLlama layer costs minutes of a shared 2-core machine for no measured gain."""
    return kind == "cuda"


def probe_caps(torch_device, *, compile: bool | None = None) -> KernelCaps:
    """:class:`KernelCaps` of ``torch_device`` in this process (``compile`` default: :func:`default_compile`)."""
    import torch

    from .backends import torchao_available
    from .fp8 import _probe_scaled_mm

    device = torch.device(torch_device)
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    scaled = device.type in ("cuda", "cpu") and (capability is None or capability >= FP8_MIN_CAPABILITY)
    return KernelCaps(device.type, capability, torchao_available() is None,
                      scaled and _probe_scaled_mm(device, tensorwise=True) is None,
                      default_compile(device.type) if compile is None else compile)


def input_amax(model, names, calibrate) -> dict[str, float]:
    """Largest |input| each linear ``names`` sees while ``calibrate(model)`` runs (forward hooks, removed after)."""
    seen = {n: 0.0 for n in names}
    hooks = []
    for name in names:
        def hook(module, args, name=name):
            seen[name] = max(seen[name], float(args[0].detach().abs().amax()))
        hooks.append(model.get_submodule(name).register_forward_pre_hook(hook))
    try:
        calibrate(model)
    finally:
        for h in hooks:
            h.remove()
    return seen


@dataclass(frozen=True)
class AppliedKernel:
    """What :func:`apply_kernel` did: the choice, the model to run (compiled or not), and the layers per kernel."""

    choice: KernelChoice
    model: object
    layers: dict

    @property
    def label(self) -> str:
        return self.choice.kernel


def apply_kernel(model, names, choice: KernelChoice, *, calibrate=None) -> AppliedKernel:
    """Quantize the linears ``names`` of ``model`` (in place) for ``choice``; returns what runs.

    ``calibrate(model)``: a few forwards, for the fp8 activation scale (required by the fp8 kernel).
    A native choice is the caller's to apply (the suite's ``quantize_model``): ValueError here."""
    from .tree import set_module

    names = list(names)
    if choice.native:
        raise ValueError(f"apply_kernel: {choice.fmt} runs the suite's own path here ({choice.reason}); "
                         "quantize with pytest_genai.quant.quantize_model instead")
    if choice.kernel in (KERNEL_TORCHAO_INT8, KERNEL_TORCHAO_INT8_COMPILE):
        from .backends import torchao_int8_weight_only

        torchao_int8_weight_only(model, names)
        run = model
        if choice.kernel == KERNEL_TORCHAO_INT8_COMPILE:
            import torch

            run = torch.compile(model)
        return AppliedKernel(choice, run, {n: choice.kernel for n in names})
    from .fp8 import StaticFp8Linear, shape_fits_scaled_mm

    if calibrate is None:
        raise ValueError("apply_kernel: the fp8 kernel uses a static activation scale; pass calibrate=<callable "
                         "running a few forwards through the model>")
    amax = input_amax(model, names, calibrate)
    layers = {}
    for name in names:
        linear = model.get_submodule(name)
        out_f, in_f = linear.weight.shape
        if not shape_fits_scaled_mm(in_f, out_f, linear.weight.device.type):
            layers[name] = "fp32 (shape not a multiple of 16)"
            continue
        set_module(model, name, StaticFp8Linear.from_linear(linear, amax[name]))
        layers[name] = choice.kernel
    return AppliedKernel(choice, model, layers)
