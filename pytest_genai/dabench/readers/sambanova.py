"""SambaTune section report (SambaNova RDU) -> :class:`DataflowProfile`.

Format read (SambaNova documentation, SambaTune "Section report", docs.sambanova.ai/sambatune/1.16/section-report.html
and .../latest/section-report.html): CSV at ``<output>/reports/section_report.csv``, one row per (section, chip),
columns ``section_id``, ``chip_id``, ``partition_id``, ``section type`` (Forward, Backward or Optimizer),
``measured throughput, samples/s``, ``measured latency (cycles)``, ``measured latency (sec)``,
``measured DDR read BW, GB/s``, ``measured DDR write BW, GB/s``, ``measured DDR total BW, GB/s``,
``measured PMU count``, ``measured PMU utilization``, ``measured PCU count``, ``measured PCU utilization``
(the two utilizations documented as "a percentage of [PCUs/PMUs] available in the RDU"; the DDR columns are in
the 1.16 page, not in 1.15).

Mapping: the RDU runs sections one after another, so allocation ratio = latency-weighted mean of the sections' PCU
utilization / 100; LI is over sections' measured latencies (the paper reports O3 balance falling as layers grow).
Assumed (not shown in the docs' text): utilization cells are percents with or without a ``%`` sign; numbers may
carry thousands separators; header names are matched ignoring case and surrounding spaces.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance
from pytest_genai.dabench.readers import DataflowProfile, parse_number

LATENCY_S = "measured latency (sec)"
LATENCY_CYCLES = "measured latency (cycles)"
PCU_UTIL = "measured pcu utilization"
PMU_UTIL = "measured pmu utilization"
DDR_TOTAL = "measured ddr total bw, gb/s"
REQUIRED = ("section_id", PCU_UTIL)


def parse_section_report(text: str, *, li_definition: str = "mean_over_max") -> DataflowProfile:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        raise ValueError("SambaTune section report is empty")
    columns = {name.strip().lower(): name for name in reader.fieldnames}
    for need in REQUIRED:
        if need not in columns:
            raise ValueError(f"SambaTune section report: column {need!r} is missing; have {sorted(columns)}")
    latency_col = LATENCY_S if LATENCY_S in columns else LATENCY_CYCLES if LATENCY_CYCLES in columns else None
    if latency_col is None:
        raise ValueError(f"SambaTune section report: neither {LATENCY_S!r} nor {LATENCY_CYCLES!r} is present")

    def value(row: dict[str, str], col: str) -> float:
        return parse_number(row[columns[col]], field=f"section {row[columns['section_id']]}: {col}")

    latencies, pcu, pmu, ddr = [], [], [], []
    for row in reader:
        if not any((v or "").strip() for v in row.values()):
            continue
        latencies.append(value(row, latency_col))
        pcu.append(value(row, PCU_UTIL) / 100.0)
        if PMU_UTIL in columns:
            pmu.append(value(row, PMU_UTIL) / 100.0)
        if DDR_TOTAL in columns:
            ddr.append(value(row, DDR_TOTAL))
    if not latencies:
        raise ValueError("SambaTune section report has no section rows")
    total = sum(latencies)
    if total <= 0:
        raise ValueError("SambaTune section report: all section latencies are 0")

    def weighted(xs: list[float]) -> float:
        return sum(x * t for x, t in zip(xs, latencies)) / total

    extra = {"sections": float(len(latencies)), "pcu_utilization_max": max(pcu)}
    if pmu:
        extra["pmu_utilization_time_weighted"] = weighted(pmu)
    if ddr:
        extra["ddr_total_bw_gbs_time_weighted"] = weighted(ddr)
        extra["ddr_total_bw_gbs_max"] = max(ddr)  # the run's own DDR ceiling: at most the hardware's
        if latency_col == LATENCY_S:
            # Bytes each section moved to and from DDR: its measured bandwidth over its measured latency.
            extra["ddr_total_bytes"] = sum(bw * 1e9 * t for bw, t in zip(ddr, latencies))
    if latency_col == LATENCY_S:
        extra["total_latency_s"] = total
    return DataflowProfile(
        vendor="sambanova",
        source_format="SambaTune reports/section_report.csv",
        allocation_ratio=weighted(pcu),
        allocation_units="PCU",
        load_imbalance=load_imbalance(latencies, li_definition),
        li_definition=LI_DEFINITIONS[li_definition],
        li_subtasks=f"sections ({latency_col})",
        subtask_loads=tuple(latencies),
        extra=extra,
    )


def read_section_report(path: str | Path, **kwargs: str) -> DataflowProfile:
    return parse_section_report(Path(path).read_text(encoding="utf-8"), **kwargs)
