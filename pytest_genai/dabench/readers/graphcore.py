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
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

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


def read_popvision(path: str | Path, **kwargs: str) -> DataflowProfile:
    """Open ``profile.pop`` with ``pva`` (Poplar SDK) and read it; ImportError names the SDK when it is absent."""
    try:
        import pva
    except ImportError as exc:
        raise ImportError(
            "reading profile.pop needs the PopVision Analysis Library (`pva`, shipped with the Poplar SDK)"
        ) from exc
    try:
        return profile_from_report(pva.openReport(str(path)), **kwargs)
    except ValueError as exc:
        from pytest_genai.dabench.readers import LayoutError

        raise LayoutError(str(path), None, "a PopVision report with compilation.target and tiles", str(exc)) from None
