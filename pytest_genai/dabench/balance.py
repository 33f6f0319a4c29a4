"""Load imbalance LI over subtasks (Paper B, B1).

DABench-LLM reports a load-imbalance metric whose values near 1 mean better balance, the slowest subtask bounding
the whole. The default here is ``mean / max`` of the subtask loads (the fraction of the slowest subtask's time the
average subtask is busy; equivalently ideal time over bottleneck time for a pipeline of the subtasks); ``min / max``
is the stricter alternative. The definition used is always named in the output (``LI_DEFINITIONS``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_genai.stats import Interval

LI_DEFINITIONS = {
    "mean_over_max": "mean(load) / max(load)",
    "min_over_max": "min(load) / max(load)",
}


def load_imbalance(loads: Sequence[float], definition: str = "mean_over_max") -> float:
    """LI of ``loads`` (times, cycles or memory per subtask) in [0, 1]; 1 when all loads are equal.

    Scale-invariant; a single subtask is perfectly balanced. Raises ValueError for an empty sequence, a negative
    or non-finite load, all-zero loads, or an unknown ``definition``.
    """
    if definition not in LI_DEFINITIONS:
        raise ValueError(f"unknown load-imbalance definition {definition!r}; use one of {sorted(LI_DEFINITIONS)}")
    values = [float(x) for x in loads]
    if not values:
        raise ValueError("load_imbalance needs at least one subtask load")
    for i, x in enumerate(values):
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"subtask load #{i} is {x!r}; loads must be finite and >= 0")
    peak = max(values)
    if peak == 0:
        raise ValueError("all subtask loads are 0; load imbalance is undefined")
    floor = min(values) / peak
    if definition == "min_over_max":
        return floor
    # mean lies in [min, max]; the clamp only removes floating-point rounding at the ends.
    return min(1.0, max(floor, math.fsum(values) / len(values) / peak))


def load_imbalance_interval(samples: Sequence[Sequence[float]], definition: str = "mean_over_max") -> Interval:
    """Confidence interval of the LI of per-subtask *medians*, ``samples`` holding every subtask's timed rounds.

    The LI a run records is :func:`load_imbalance` of each subtask's median load; a burst of machine noise during
    one subtask's rounds moves it, and this interval (a bootstrap redrawing each subtask's rounds) says how far, so
    a claim on LI is judged on it like any timing claim."""
    from pytest_genai.stats import bootstrap_medians_interval

    if definition not in LI_DEFINITIONS:  # before resampling: the error names the argument, not a resample
        raise ValueError(f"unknown load-imbalance definition {definition!r}; use one of {sorted(LI_DEFINITIONS)}")
    return bootstrap_medians_interval(samples, lambda medians: load_imbalance(medians, definition),
                                      method=f"LI ({LI_DEFINITIONS[definition]}) of subtask medians")


def li_deepest_over_shallowest(li_by_layers: Mapping[int, float | None]) -> float:
    """LI at the largest layer count over LI at the smallest (counts whose LI is missing are left out): below 1 when
    balance falls as layers grow (Paper B: RDU O3's load balance falls as layers grow)."""
    known = sorted((n, li) for n, li in li_by_layers.items() if li is not None)
    if len(known) < 2:
        raise ValueError(f"need an LI at two or more layer counts, got {dict(li_by_layers)}")
    (_, shallow), (_, deep) = known[0], known[-1]
    if shallow <= 0:
        raise ValueError(f"LI at {known[0][0]} layers is {shallow}; a ratio needs a positive LI")
    return deep / shallow
