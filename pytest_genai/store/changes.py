"""Change points in a metric's stored history (``pytest-genai history``): where a series shifted, by how much, how
significantly. Apache Otava's e-divisive means with its defaults; without it ``--changes`` is an error, never "none"."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .read import Point

MAX_PVALUE = 0.001  # Otava's default --pvalue
WINDOW = 50  # Otava's default --window

INSTALL_HINT = ("change points need apache-otava: pip install 'pytest-genai[changepoints]' (or, keeping this "
                "environment's numpy and scipy, pip install --no-deps apache-otava)")


class ChangePointsUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class ChangePoint:
    """The first run of a line's new level, with the step and its significance."""

    line: str
    run_id: int
    run_time: str | None
    commit: str | None
    before: float  # mean since the previous change point
    after: float  # mean up to the next change point
    pvalue: float
    direction: str | None

    @property
    def step(self) -> float:
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
            p = kept[int(cp.index)]
            out.append(ChangePoint(label, p.run_id, p.run_time, p.commit, float(cp.stats.mean_1),
                                   float(cp.stats.mean_2), float(cp.stats.pvalue), direction))
    return out
