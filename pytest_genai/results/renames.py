"""Retired metric names read as their current names (and registry sources): old run files pair with new ones."""
from __future__ import annotations

from collections.abc import Mapping

_MODELED = ("bytes_moved", "arithmetic_intensity", "achieved_gbs", "efficiency", "compute_bound")
RENAMED: dict[str, tuple[str, str]] = {  # old name -> (current name, its source)
    **{f"{prefix}{name}": (f"{prefix}{name}_modeled", "modeled")
       for prefix in ("", "matmul_", "attention_", "elementwise_") for name in _MODELED},
    "compute_efficiency": ("compute_efficiency_spec", "spec"),
    "flop_counter_ratio": ("flop_counter_ratio_modeled", "modeled"),
}


def current_names(metrics: Mapping[str, float], sources: Mapping[str, str], units: Mapping[str, str],
                  ) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """``metrics``/``sources``/``units`` with retired names replaced (a current name already present wins)."""
    m, s, u = dict(metrics), dict(sources), dict(units)
    for old, (new, source) in ((o, n) for o, n in RENAMED.items() if o in m):
        value, _, unit = m.pop(old), s.pop(old, None), u.pop(old, None)
        if new not in m:
            m[new], s[new] = value, source
            if unit is not None:
                u[new] = unit
    return m, s, u
