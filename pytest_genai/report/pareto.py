"""Pareto front of (x, y) points, each axis with its own better direction."""

from __future__ import annotations

import math
from typing import Sequence


def pareto_front(points: Sequence[tuple[float, float]], maximize_x: bool = True, maximize_y: bool = True) -> list[int]:
    """Indices of the non-dominated finite points (exact duplicates all kept), sorted by x from worst to best."""
    sx, sy = (1.0 if maximize_x else -1.0), (1.0 if maximize_y else -1.0)
    finite = [(sx * x, sy * y, i) for i, (x, y) in enumerate(points) if math.isfinite(x) and math.isfinite(y)]
    return [i for x, y, i in sorted(finite)  # a point never dominates itself nor its duplicate
            if not any(x2 >= x and y2 >= y and (x2 > x or y2 > y) for x2, y2, _ in finite)]
