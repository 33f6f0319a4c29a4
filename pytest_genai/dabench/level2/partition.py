"""Pipeline-parallel partitioning of a layer stack into contiguous stages (Paper B, B2).

DABench-LLM's IPU finding: in a pipeline the most loaded stage sets the throughput, so the layers must be split to
minimise the maximum stage load ("minimise the maximum layers per IPU"). This module turns that into a tool.

* :func:`optimal_partition` — the contiguous split of per-layer loads into ``stages`` non-empty stages that
  minimises the maximum stage load (the linear-partition problem), solved exactly by dynamic programming over
  correctly rounded segment sums.
* :func:`naive_partition` — the equal-layer-count split (the first ``n % stages`` stages get one layer more), the
  baseline a load-unaware deployment uses.
* :class:`Partition` — the stage loads, their maximum, the stage LI (mean / max, as in
  :func:`pytest_genai.dabench.balance.load_imbalance`) and the pipeline throughput bound ``1 / max stage load``.

Everything is pure: floats in, floats out. Loads are any additive per-layer cost (measured seconds here).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction

from pytest_genai.dabench.balance import load_imbalance


def _check_loads(loads: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(x) for x in loads)
    if not values:
        raise ValueError("per-layer loads are empty; measure at least one layer")
    for i, x in enumerate(values):
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"layer load #{i} is {x!r}; per-layer loads must be finite and >= 0")
    if not any(values):
        raise ValueError("every per-layer load is 0; a partition needs some measured work")
    return values


def _check_stages(stages: int, layers: int) -> None:
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise ValueError(f"stages={stages!r} must be a positive int")
    if stages > layers:
        raise ValueError(
            f"stages={stages} exceeds the {layers} layers: every pipeline stage needs at least one layer; "
            f"use at most {layers} stages"
        )


@dataclasses.dataclass(frozen=True)
class Partition:
    """A split of ``loads`` into contiguous stages: stage ``i`` holds layers ``bounds[i]`` .. ``bounds[i+1] - 1``."""

    loads: tuple[float, ...]
    bounds: tuple[int, ...]

    def __post_init__(self) -> None:
        loads = _check_loads(self.loads)
        object.__setattr__(self, "loads", loads)
        b = tuple(self.bounds)
        object.__setattr__(self, "bounds", b)
        if len(b) < 2 or b[0] != 0 or b[-1] != len(loads):
            raise ValueError(
                f"Partition.bounds {b} must start at 0 and end at the layer count {len(loads)}, e.g. (0, 2, {len(loads)})"
            )
        if any(lo >= hi for lo, hi in zip(b, b[1:])):
            raise ValueError(f"Partition.bounds {b} must be strictly increasing: every stage needs at least one layer")

    @property
    def id(self) -> str:
        """Layer ranges per stage, e.g. ``0-3|4-6``."""
        return "|".join(f"{lo}-{hi - 1}" if hi - lo > 1 else f"{lo}" for lo, hi in zip(self.bounds, self.bounds[1:]))

    @property
    def stages(self) -> int:
        return len(self.bounds) - 1

    @property
    def stage_layers(self) -> tuple[range, ...]:
        return tuple(range(lo, hi) for lo, hi in zip(self.bounds, self.bounds[1:]))

    @property
    def layers_per_stage(self) -> tuple[int, ...]:
        return tuple(hi - lo for lo, hi in zip(self.bounds, self.bounds[1:]))

    @property
    def stage_loads(self) -> tuple[float, ...]:
        """Each stage's load: the correctly rounded sum of its layers' loads (``math.fsum``)."""
        return tuple(math.fsum(self.loads[lo:hi]) for lo, hi in zip(self.bounds, self.bounds[1:]))

    @property
    def max_stage_load(self) -> float:
        """The bottleneck stage's load: with one micro-batch in flight per stage, the pipeline's period."""
        return max(self.stage_loads)

    @property
    def load_imbalance(self) -> float:
        """Stage LI = mean stage load / max stage load (Paper B's LI over pipeline stages; 1 = balanced)."""
        return load_imbalance(self.stage_loads, "mean_over_max")

    @property
    def throughput_bound(self) -> float:
        """Steady-state pipeline throughput bound ``1 / max stage load`` (micro-batches per load unit)."""
        return 1.0 / self.max_stage_load if self.max_stage_load > 0 else math.inf


def naive_partition(loads: Sequence[float], stages: int) -> Partition:
    """Equal layer counts per stage, ignoring loads (``numpy.array_split`` order: earlier stages get the extra)."""
    values = _check_loads(loads)
    _check_stages(stages, len(values))
    base, extra = divmod(len(values), stages)
    bounds = [0]
    for i in range(stages):
        bounds.append(bounds[-1] + base + (1 if i < extra else 0))
    return Partition(values, tuple(bounds))


def optimal_partition(loads: Sequence[float], stages: int) -> Partition:
    """The contiguous split into ``stages`` non-empty stages with the smallest maximum stage load (exact).

    Dynamic programming over prefixes, ``O(stages * n^2)``: ``best[k][j]`` is the smallest achievable maximum when
    the first ``j`` layers form ``k`` stages. Segment sums come from exact rational prefix sums rounded once, so they
    equal :attr:`Partition.stage_loads` bit for bit and the optimum is never beaten by another split through
    rounding. Among optimal splits the one with the latest stage boundaries is returned (deterministic).
    """
    values = _check_loads(loads)
    n = len(values)
    _check_stages(stages, n)
    prefix = [Fraction(0)]
    for x in values:
        prefix.append(prefix[-1] + Fraction(x))
    cost = [[0.0] * (n + 1) for _ in range(n + 1)]
    for i in range(n):
        for j in range(i + 1, n + 1):
            cost[i][j] = float(prefix[j] - prefix[i])
    inf = math.inf
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for j in range(k, n - (stages - k) + 1):
            for i in range(k - 1, j):
                candidate = max(best[k - 1][i], cost[i][j])
                if candidate <= best[k][j]:
                    best[k][j], cut[k][j] = candidate, i
    bounds = [n]
    for k in range(stages, 0, -1):
        bounds.append(cut[k][bounds[-1]])
    return Partition(values, tuple(reversed(bounds)))


def bubble_fraction_modeled(stages: int, micro_batches: int) -> float:
    """Idle fraction of a GPipe schedule with equal stages: ``(stages - 1) / (micro_batches + stages - 1)``.

    A model (Huang et al., GPipe, 2019), not a measurement.
    """
    for name, v in (("stages", stages), ("micro_batches", micro_batches)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    return (stages - 1) / (micro_batches + stages - 1)


def pipeline_step_time_modeled(stage_times: Sequence[float], micro_batches: int) -> float:
    """Modeled time of one GPipe step: ``(micro_batches + stages - 1) * max(stage_times)``.

    ``stage_times`` are per-micro-batch stage times (forward + backward); communication is not modeled.
    """
    times = _check_loads(stage_times)
    bubble_fraction_modeled(len(times), micro_batches)  # validates micro_batches
    return (micro_batches + len(times) - 1) * max(times)
