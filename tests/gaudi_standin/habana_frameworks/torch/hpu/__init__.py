"""Stand-in for ``habana_frameworks.torch.hpu``: no HPU is available (``is_available()`` is False, so the suite's
device probe finds none and parametrizes no hpu variant) unless ``GENAI_STANDIN_HPU=1``, which one leg case sets in
its own process so that optimum-habana and accelerate take their HPU setup branch; no tensor can go to an HPU
either way. Memory counters read zero."""
from __future__ import annotations

import contextlib
import os

from habana_frameworks.torch.hpu import random  # noqa: F401

_PEAK = [0]


def is_available() -> bool:
    # GENAI_STANDIN_HPU=1 (set by one leg case in its own process): libraries take the HPU branch of their setup
    return os.environ.get("GENAI_STANDIN_HPU") == "1"


def device_count() -> int:
    return 0


def current_device() -> int:
    return 0


def set_device(device) -> None:
    """No card to select."""


def get_device_name(device=None) -> str:
    return "STANDIN-CPU"


def synchronize(device=None) -> None:
    """CPU ops are synchronous: nothing queued."""


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return _PEAK[0]


def reset_peak_memory_stats(device=None) -> None:
    _PEAK[0] = 0


def memory_stats(device=None) -> dict[str, int]:
    return {"InUse": 0, "MaxInUse": _PEAK[0], "Limit": 0}


def is_initialized() -> bool:
    return False


def wrap_in_hpu_graph(module, *args, **kwargs):
    """HPU graphs replay a recorded launch sequence on the card; on the CPU the module runs as it is."""
    return module


@contextlib.contextmanager
def sdp_kernel(enable_recompute: bool = False, **kwargs):
    """Selects the fused SDPA kernel's recompute variant on the card; one variant here."""
    yield
