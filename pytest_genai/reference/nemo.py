"""NVIDIA NeMo's performance summary (``docs/source/performance/performance_summary.md``) as reference rows.

Each ``###`` section states precision, container and system above one Markdown table of rows; a column a table lacks
is an unstated setting of its rows.
"""
from __future__ import annotations

import re
from typing import Any

from pytest_genai.reference.optimum_habana import ReferenceFormatError
from pytest_genai.reference.row import Provenance, ReferenceRow

#: The page's systems -> (device kind, the suite's generation): a DGX H100 holds eight H100 SXM GPUs.
SYSTEMS = {"DGX-H100": ("cuda", "h100-sxm")}
#: Column headings -> (setting or metric name, unit or None for a setting).
COLUMNS = {
    "#-GPUs": ("cards", None), "GBS": ("global_batch", None), "MBS": ("micro_batch", None),
    "Sequence Length": ("seq_len", None), "Packed Sequence Length": ("seq_len", None),
    "TP": ("tensor_parallel", None), "PP": ("pipeline_parallel", None), "CP": ("context_parallel", None),
    "VP": ("virtual_pipeline", None), "Task": ("task", None),
    "Tokens / sec / GPU": ("tokens_per_s_per_device", "tokens/s"),
    "Model TFLOP / sec / GPU": ("model_tflops_per_device", "TFLOP/s"),
}
SETTINGS = ("cards", "global_batch", "micro_batch", "seq_len", "tensor_parallel", "pipeline_parallel",
            "context_parallel", "virtual_pipeline", "precision")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _number(cell: str) -> float | None:
    m = re.fullmatch(r"\**\[?([\d.]+)\]?(\(.*\))?\**", cell.replace(",", ""))
    return float(m.group(1)) if m else None


def read_summary(text: str, provenance: Provenance) -> list[ReferenceRow]:
    """Every table row of the page as a :class:`ReferenceRow` (line numbers are the row's line in ``text``)."""
    rows: list[ReferenceRow] = []
    section: str = ""
    context: dict[str, Any] = {}
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("### "):
            section, context, header = line[4:].strip(), {}, None
            continue
        m = re.search(r"at (FP8|BF16|FP16) precision", line)
        if m:
            context["precision"] = m.group(1).lower()
        m = re.search(r"Container: \[([^\]]+)\]", line)
        if m:
            context["container"] = m.group(1)
        m = re.search(r"System: (\S+)", line)
        if m:
            context["system"] = m.group(1)
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(_row(dict(zip(header, cells)), section, dict(context), provenance, number))
    if not rows:
        raise ReferenceFormatError(f"{provenance.path}: no Markdown table rows found; is this NeMo's performance "
                                   "summary?")
    return rows


def _row(cells: dict[str, str], section: str, context: dict[str, Any], provenance: Provenance,
         line: int) -> ReferenceRow:
    where = f"{provenance.path} line {line}"
    system = context.get("system")
    if system not in SYSTEMS:
        raise ReferenceFormatError(f"{where}: system {system!r} is none of {', '.join(SYSTEMS)}; add it to SYSTEMS")
    kind, generation = SYSTEMS[system]
    settings: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    units: dict[str, str] = {}
    for heading, cell in cells.items():
        name, unit = COLUMNS.get(heading, (None, None))
        if name is None:
            continue
        if name == "task":
            settings["task"] = cell
            continue
        value = _number(cell)
        if value is None:
            raise ReferenceFormatError(f"{where}: column {heading!r} is {cell!r}, not a number")
        if unit is None:
            settings[name] = int(value)
        else:
            metrics[name], units[name] = value, unit
    if "precision" in context:
        settings["precision"] = context["precision"]
    task = settings.pop("task", section.lower())
    model = cells.get("Model", "").lower()
    return ReferenceRow(
        row_id=f"{section}: {cells.get('Model')} {task} {settings.get('cards')} GPUs",
        experiment="finetune", model=model, task=task, device_kind=kind, generation=generation,
        cards=settings.get("cards"),
        identity={"publisher": "nemo", "section": section, "task": task, **settings},
        settings={"container": context.get("container", "")},
        unstated=tuple(s for s in SETTINGS if s not in settings),
        metrics=metrics, units=units,
        provenance=Provenance(provenance.source, provenance.repository, provenance.path, provenance.commit, line,
                              provenance.date, table=section),
        note=f"system {system}",
    )
