"""Graphcore PopVision report (IPU) -> :class:`DataflowProfile`.

Format read: the ``profile.pop`` that Poplar writes with ``POPLAR_ENGINE_OPTIONS='{"autoReport.all":"true",
"autoReport.directory":DIR}'``, opened with the PopVision Analysis Library (``import pva;
pva.openReport(path)``; docs.graphcore.ai/projects/libpva, "PopVision Analysis Python API"). Fields read:
``report.compilation.target.numTiles``, ``.tilesPerIpu``, ``.numIPUs`` and ``.bytesPerTile`` (or ``.bytesPerIPU`` /
``tilesPerIpu`` when ``bytesPerTile`` is absent), and per tile ``report.compilation.tiles[i].memory.total.excludingGaps``
(bytes used on the tile, excluding alignment gaps) -- the attributes Graphcore's own TensorFlow test utilities read.

Mapping: allocation ratio = tiles used / tiles available (Paper B's definition: a share of the compute units, not of
memory). A tile is used when the compiler placed compute on it: its ``memory.category.vertexInstanceState``
(vertex state) is non-zero where the report gives the category, else (older reports) when its memory excluding gaps
is non-zero; which test was used is recorded in ``allocation_units``. Memory is its own figure: per IPU, the used
tile memory over that IPU's capacity (``ipu_memory_max_fraction``, the fullest IPU, and ``ipu_memory_used_bytes_max``)
-- Paper B's "memory capacity for large models". LI over tiles of their used memory (the compiler spreads a layer
over tiles; an overloaded tile bounds both memory capacity and compute). Per-IPU memory uses the assumption that
tiles are listed IPU by IPU (``tilesPerIpu`` consecutive tiles each).

Execution profile (:func:`execution_cycles_from_report`, :func:`read_execution_profile`): the ``profile.pop`` of a
separate, untimed run with ``autoReport.outputExecutionProfile`` on. Fields read, as Graphcore's own tutorials and
test helpers read them: ``report.execution.runs[i].steps`` (else ``report.execution.steps``), and per step
``step.program.type.name`` (a ``pva.Program.Type`` member) and ``step.ipus[k].cycles`` (the step's cycles on IPU k;
the libpva tutorial sums ``step.ipus[0].cycles`` over steps for "the total number of cycles on IPU 0"). Program types
are split as Graphcore's PopVision summary helper does (on-tile compute / exchange / sync / host I/O):
``OnTileExecute`` is compute; ``DoExchange`` (tile to tile), ``GlobalExchange`` (between IPUs) and ``StreamCopyMid``
(the transfer itself of a stream copy: host or streaming-memory traffic) are data movement; ``Sync``, ``SyncAns``,
``StreamCopyBegin`` and ``StreamCopyEnd`` are waiting (for other tiles or IPUs, for the host to be ready) and count on
neither side; any other type is kept apart as ``other`` and named. Assumed, not checked on a real profile (no IPU
here): that a profile written without the execution profile opens with no runs and no steps (Graphcore's TensorFlow
tests guard on ``if report.execution.runs``); that Begin/End are waits rather than traffic (Graphcore's compute/IO
overlap helpers take only ``StreamCopyMid`` as I/O); and that the first of several runs is warm-up (Graphcore's
cycle helper notes the first run's stream copies are skewed by instrumentation), so it is skipped when there are more.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance
from pytest_genai.dabench.readers import DataflowProfile


def profile_from_report(report: Any, *, li_definition: str = "mean_over_max") -> DataflowProfile:
    """Read a ``pva`` report object (or any object with the same attributes)."""
    try:
        target = report.compilation.target
        tiles = list(report.compilation.tiles)
    except AttributeError as exc:
        raise ValueError(f"not a PopVision report: missing report.compilation.target/tiles ({exc})") from None
    num_tiles = int(target.numTiles)
    tiles_per_ipu = int(getattr(target, "tilesPerIpu", num_tiles))
    num_ipus = int(getattr(target, "numIPUs", max(1, num_tiles // max(1, tiles_per_ipu))))
    bytes_per_tile = getattr(target, "bytesPerTile", None)
    if bytes_per_tile is None:
        bytes_per_ipu = getattr(target, "bytesPerIPU", None)
        if bytes_per_ipu is None:
            raise ValueError("PopVision report target has neither bytesPerTile nor bytesPerIPU")
        bytes_per_tile = bytes_per_ipu / tiles_per_ipu
    if not tiles:
        raise ValueError("PopVision report has no tiles")
    used = [float(t.memory.total.excludingGaps) for t in tiles]
    vertex_state = [_vertex_state_bytes(t) for t in tiles]
    if all(v is not None for v in vertex_state):
        busy = [v > 0 for v in vertex_state]
        unit = "tiles (vertexInstanceState > 0)"
    else:
        busy = [u > 0 for u in used]
        unit = "tiles (memory excluding gaps > 0; no vertexInstanceState category in this report)"
    capacity = num_tiles * float(bytes_per_tile)
    per_ipu = [sum(used[i * tiles_per_ipu:(i + 1) * tiles_per_ipu]) for i in range(num_ipus)]
    extra = {
        "num_ipus": float(num_ipus),
        "num_tiles": float(num_tiles),
        "tiles_used": float(sum(busy)),
        "tile_memory_used_bytes": sum(used),
        "tile_memory_max_bytes": max(used),
        "tile_memory_fraction": sum(used) / capacity,
        "ipu_memory_used_bytes_max": max(per_ipu),
        "ipu_memory_max_fraction": max(per_ipu) / (tiles_per_ipu * float(bytes_per_tile)),
    }
    return DataflowProfile(
        vendor="graphcore",
        source_format="PopVision profile.pop via libpva",
        allocation_ratio=sum(busy) / num_tiles,
        allocation_units=unit,
        load_imbalance=load_imbalance(used, li_definition),
        li_definition=LI_DEFINITIONS[li_definition],
        li_subtasks="tiles (memory.total.excludingGaps)",
        subtask_loads=tuple(used),
        extra=extra,
    )


def _vertex_state_bytes(tile: Any) -> float | None:
    try:
        return float(tile.memory.category.vertexInstanceState.total)
    except AttributeError:
        return None


def _read_report(path: str | Path, read: Callable[[Any], Any], expected: str) -> Any:
    """Open ``path`` with ``pva`` (Poplar SDK) and ``read`` the report; ImportError names the SDK when it is absent,
    LayoutError names the file and ``expected`` when the report lacks what ``read`` needs."""
    try:
        import pva
    except ImportError as exc:
        raise ImportError(
            "reading profile.pop needs the PopVision Analysis Library (`pva`, shipped with the Poplar SDK)"
        ) from exc
    try:
        return read(pva.openReport(str(path)))
    except ValueError as exc:
        from pytest_genai.dabench.readers import LayoutError

        raise LayoutError(str(path), None, expected, str(exc)) from None


def read_popvision(path: str | Path, **kwargs: str) -> DataflowProfile:
    """Open ``profile.pop`` with ``pva`` (Poplar SDK) and read it; ImportError names the SDK when it is absent."""
    return _read_report(path, lambda report: profile_from_report(report, **kwargs),
                        "a PopVision report with compilation.target and tiles")


#: Execution-profile program types by what the IPU spends the cycles on (``pva.Program.Type`` member names).
PROGRAM_CLASSES = {
    "OnTileExecute": "compute",
    "DoExchange": "exchange",  # tile to tile, on one IPU
    "GlobalExchange": "exchange",  # between IPUs
    "StreamCopyMid": "stream_copy",  # the transfer of a stream copy: host or streaming memory
    "StreamCopyBegin": "wait",  # waiting for the host side of the copy to be ready
    "StreamCopyEnd": "wait",
    "Sync": "wait",
    "SyncAns": "wait",
}


@dataclasses.dataclass(frozen=True)
class ExecutionCycles:
    """Measured cycles of an execution profile per IPU (index k: IPU k), by what they were spent on.

    ``compute``: on-tile execution; ``exchange``: tile-to-tile and inter-IPU exchange; ``stream_copy``: stream-copy
    transfers (host / streaming memory); ``wait``: syncs and stream-copy begin/end; ``other``: further program
    types (``other_types``). Data movement = exchange + stream copy; waiting counts on neither side.
    """

    compute: tuple[float, ...]
    exchange: tuple[float, ...]
    stream_copy: tuple[float, ...]
    wait: tuple[float, ...]
    other: tuple[float, ...]
    other_types: tuple[str, ...]
    runs_read: int
    runs_skipped: int

    @property
    def movement(self) -> tuple[float, ...]:
        return tuple(e + s for e, s in zip(self.exchange, self.stream_copy))

    @property
    def compute_cycle_fraction(self) -> float | None:
        """Compute cycles / (compute + data-movement cycles), summed over IPUs; None when both are zero."""
        return _fraction(sum(self.compute), sum(self.movement))

    @property
    def compute_cycle_fraction_ipu_max(self) -> float | None:
        """The largest per-IPU compute fraction: below 0.5, every IPU spent more cycles moving data than computing."""
        fractions = [f for f in map(_fraction, self.compute, self.movement) if f is not None]
        return max(fractions) if fractions else None

    @property
    def compute_bound(self) -> bool | None:
        """Compute-bound when compute cycles >= data-movement cycles (summed over IPUs); None when both are zero."""
        fraction = self.compute_cycle_fraction
        return None if fraction is None else sum(self.compute) >= sum(self.movement)


def _fraction(compute: float, movement: float) -> float | None:
    return compute / (compute + movement) if compute + movement > 0 else None


def execution_cycles_from_report(report: Any) -> ExecutionCycles:
    """Read the execution part of a ``pva`` report object (or any object with the same attributes).

    ValueError when the report has no execution steps (a profile of a run without the execution profile) or its
    steps lack the fields read (an unknown layout).
    """
    execution = getattr(report, "execution", None)
    runs = list(getattr(execution, "runs", None) or ())
    if runs:
        skipped = 1 if len(runs) > 1 else 0  # the first run is warm-up when there are more
        steps = [step for run in runs[skipped:] for step in run.steps]
    else:
        skipped = 0
        steps = list(getattr(execution, "steps", None) or ())
    if not steps:
        raise ValueError("no execution steps (report.execution.runs / .steps are empty: a profile written without "
                         "autoReport.outputExecutionProfile)")
    totals: dict[str, list[float]] = {name: [] for name in ("compute", "exchange", "stream_copy", "wait", "other")}
    other_types: set[str] = set()
    for step in steps:
        try:
            type_name = str(step.program.type.name)
            per_ipu = [float(ipu.cycles) for ipu in step.ipus]
        except AttributeError as exc:
            raise ValueError(f"an execution step without program.type.name / ipus[].cycles ({exc})") from None
        kind = PROGRAM_CLASSES.get(type_name, "other")
        if kind == "other":
            other_types.add(type_name)
        for column in totals.values():
            column.extend([0.0] * (len(per_ipu) - len(column)))
        for k, cycles in enumerate(per_ipu):
            totals[kind][k] += cycles
    return ExecutionCycles(**{name: tuple(values) for name, values in totals.items()},
                           other_types=tuple(sorted(other_types)), runs_read=max(1, len(runs) - skipped),
                           runs_skipped=skipped)


def read_execution_profile(path: str | Path) -> ExecutionCycles:
    """Open an execution ``profile.pop`` with ``pva`` and read its cycles; LayoutError names the file when it holds
    no execution profile (e.g. it came from a timed run, which writes the graph profile only)."""
    return _read_report(path, execution_cycles_from_report,
                        "a PopVision report with an execution profile (report.execution.runs with steps; written "
                        "with autoReport.outputExecutionProfile=true)")
