"""Stand-in for ``habana_frameworks.torch.utils.internal``: the mode is read from ``PT_HPU_LAZY_MODE`` once, at
first import, as the bridge reads it (unset reads as lazy here)."""
import os

_LAZY = os.environ.get("PT_HPU_LAZY_MODE", "1") != "0"


def is_lazy() -> bool:
    return _LAZY
