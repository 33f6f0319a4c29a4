"""Stand-in for ``habana_frameworks.torch`` (CPU only; see the package docstring). As the bridge does, it registers
its ``hpu`` module as ``torch.hpu`` (libraries such as neural-compressor ask ``torch.hpu.is_available()``)."""
import torch as _torch

from habana_frameworks.torch import core, hpu, utils  # noqa: F401  (the real package exposes these on import)
from habana_frameworks.torch.utils.internal import is_lazy  # noqa: F401

if not hasattr(_torch, "hpu"):
    _torch._register_device_module("hpu", hpu)
