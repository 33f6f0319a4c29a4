"""Cerebras compiler ``compile_report.txt`` (WSE) -> :class:`DataflowProfile`.

Format read (Cerebras developer documentation, "Compile Report", docs.cerebras.net/en/latest/compiler-reports/
compile-report.html, R1.x-2.0; also quoted in ALCF's ai-testbed-userdocs "Performance Tools"): a block headed
``Estimated Overall Performance`` with ``Key: value`` lines -- ``Samples/s``, ``Compute Samples/s``,
``Transmission Samples/s``, ``Active PEs`` (percent of the wafer's PEs) and ``Compute Utilization`` (percent) --
followed by a ``|``-separated table with one row per kernel: ``Kernel Name | Samples/s | Compute Samples/s |
Transmission Samples/s | Active PEs | Compute Utilization`` (per-kernel Active PEs is a count of PEs). Table rules
(``+---+``) and blank rows are skipped.

Mapping: allocation ratio = overall Active PEs / 100 (the compiler rounds it to a whole percent). LI is over kernels,
with each kernel's load = its time per sample (1 / kernel Samples/s): the wafer pipelines kernels, so the slowest
kernel bounds the throughput. Assumed: kernel rows carry the six columns in the documented order.
"""
from __future__ import annotations

from pathlib import Path

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance
from pytest_genai.dabench.readers import DataflowProfile, parse_number

HEADER = "Estimated Overall Performance"
KERNEL_COLUMNS = ("Kernel Name", "Samples/s", "Compute Samples/s", "Transmission Samples/s", "Active PEs",
                  "Compute Utilization")


def parse_compile_report(text: str, *, li_definition: str = "mean_over_max") -> DataflowProfile:
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADER)
    except StopIteration:
        raise ValueError(f"not a Cerebras compile report: no {HEADER!r} line") from None
    overall: dict[str, float] = {}
    kernels: list[tuple[str, list[float]]] = []
    for line in lines[start + 1:]:
        s = line.strip()
        if not s or set(s) <= set("-+=|"):
            continue
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if len(cells) != len(KERNEL_COLUMNS):
                raise ValueError(f"kernel row has {len(cells)} columns, expected {len(KERNEL_COLUMNS)}: {s!r}")
            if cells[0] == KERNEL_COLUMNS[0] or not any(cells):
                continue
            kernels.append((cells[0], [parse_number(c, field=f"{cells[0]}: {col}")
                                       for c, col in zip(cells[1:], KERNEL_COLUMNS[1:])]))
        elif ":" in s and not kernels:
            key, value = (part.strip() for part in s.split(":", 1))
            overall[key] = parse_number(value, field=key)
    for key in ("Samples/s", "Active PEs", "Compute Utilization"):
        if key not in overall:
            raise ValueError(f"Cerebras compile report: overall field {key!r} is missing")
    loads = tuple(1.0 / k[1][0] for k in kernels if k[1][0] > 0)
    extra = {
        "samples_per_s": overall["Samples/s"],
        "compute_utilization": overall["Compute Utilization"] / 100.0,
        "wafer_utilization_estimate": overall["Active PEs"] * overall["Compute Utilization"] / 1e4,
    }
    for key, name in (("Compute Samples/s", "compute_samples_per_s"),
                      ("Transmission Samples/s", "transmission_samples_per_s")):
        if key in overall:
            extra[name] = overall[key]
    if kernels:
        extra["kernels"] = float(len(kernels))
        extra["kernel_active_pes_total"] = sum(k[1][3] for k in kernels)
    return DataflowProfile(
        vendor="cerebras",
        source_format="compile_report.txt (Cerebras compile report)",
        allocation_ratio=overall["Active PEs"] / 100.0,
        allocation_units="PE",
        load_imbalance=load_imbalance(loads, li_definition) if loads else None,
        li_definition=LI_DEFINITIONS[li_definition],
        li_subtasks="kernels (time per sample = 1 / kernel Samples/s)",
        subtask_loads=loads,
        extra=extra,
    )


def read_compile_report(path: str | Path, **kwargs: str) -> DataflowProfile:
    return parse_compile_report(Path(path).read_text(encoding="utf-8"), **kwargs)
