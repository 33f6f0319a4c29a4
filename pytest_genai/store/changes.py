"""Change points in a metric's stored history (``pytest-genai history METRIC``, ``--changes``): where a series shifted,
by how much, and how significant the shift is.

The detection is Apache Otava's (``otava.analysis.compute_change_points``: e-divisive means over sliding windows,
then the merge step of Fleming et al., "Hunter", ICPE 2023; a permutation-free t-test gives each point's p-value), with
Otava's own defaults: windows of 50, ``max_pvalue`` 0.001, no minimum magnitude. Nothing here re-implements it.

apache-otava 0.8 pins ``numpy==2.2.0.*`` and ``scipy<1.17`` and pulls cloud clients it needs for its own command, none
of which the detection uses: ``pip install 'pytest-genai[changepoints]'``, or in an environment whose numpy and scipy
must stay, ``pip install --no-deps apache-otava``. Without it, history prints its series and says how to get the change
points; ``--changes`` is then an error (exit 2), never a silent "no change".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .read import Point

MAX_PVALUE = 0.001
"""Otava's default significance threshold (its ``--pvalue``)."""
WINDOW = 50
"""Otava's default window length (its ``--window``)."""

INSTALL_HINT = ("change points need apache-otava: pip install 'pytest-genai[changepoints]' (or, keeping this "
                "environment's numpy and scipy, pip install --no-deps apache-otava)")


class ChangePointsUnavailable(RuntimeError):
    """apache-otava is not installed."""


@dataclass(frozen=True)
class ChangePoint:
    """The first run of a line's new level, with the step and its significance."""

    line: str
    run_id: int
    run_time: str | None
    commit: str | None
    before: float
    """The mean of the line's values from the previous change point (or its start) up to this run."""
    after: float
    """The mean from this run up to the next change point (or the newest run)."""
    pvalue: float
    direction: str | None

    @property
    def step(self) -> float:
        """``after / before - 1`` (nan when ``before`` is 0)."""
        return self.after / self.before - 1.0 if self.before else math.nan

    @property
    def worse(self) -> bool | None:
        """Whether the step is in the metric's bad direction (None for a metric without one)."""
        if self.direction not in ("higher", "lower") or not math.isfinite(self.step):
            return None
        return (self.step < 0) == (self.direction == "higher")

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "run": self.run_id, "time": self.run_time, "commit": (self.commit or "")[:12],
                "before": self.before, "after": self.after, "step": self.step, "pvalue": self.pvalue,
                "worse": self.worse}


def _detector() -> Any:
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        raise ChangePointsUnavailable(INSTALL_HINT) from None
    return compute_change_points


def find_changes(lines: Mapping[str, Sequence[Point]], direction: str | None = None,
                 max_pvalue: float = MAX_PVALUE, window: int = WINDOW) -> list[ChangePoint]:
    """The change points of every line (its points oldest first; non-finite values are left out), in line order."""
    detect = _detector()
    out: list[ChangePoint] = []
    for label, points in lines.items():
        kept = [p for p in points if math.isfinite(p.value)]
        if len(kept) < 3:  # a step needs a value on each side and one to tell it from noise
            continue
        found, _weak = detect([p.value for p in kept], window_len=window, max_pvalue=max_pvalue)
        for cp in found:
            i = int(cp.index)
            p = kept[i]
            out.append(ChangePoint(label, p.run_id, p.run_time, p.commit, float(cp.stats.mean_1),
                                   float(cp.stats.mean_2), float(cp.stats.pvalue), direction))
    return out
