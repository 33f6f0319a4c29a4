"""SambaTune section report (SambaNova RDU) -> :class:`DataflowProfile`.

Format read (SambaNova documentation, SambaTune "Section report", docs.sambanova.ai/sambatune/1.16/section-report.html
and .../latest/section-report.html): CSV at ``<output>/reports/section_report.csv``, one row per (section, chip),
columns ``section_id``, ``chip_id``, ``partition_id``, ``section type`` (Forward, Backward or Optimizer),
``measured throughput, samples/s``, ``measured latency (cycles)``, ``measured latency (sec)``,
``measured DDR read BW, GB/s``, ``measured DDR write BW, GB/s``, ``measured DDR total BW, GB/s``,
``measured PMU count``, ``measured PMU utilization``, ``measured PCU count``, ``measured PCU utilization``
(the two utilizations documented as "a percentage of [PCUs/PMUs] available in the RDU"; the DDR columns are in
the 1.16 page, not in 1.15).

Mapping: one row per (section, chip): a section run on several chips (tensor parallel) has a row per chip, and the
rows are folded into one per section, never added up as if they were more sections -- the section's latency is the
slowest chip's (the chips run it together), its PCU / PMU utilization the mean over its chips (each a percentage of
one RDU's units), its DDR bandwidth the sum over chips. Allocation ratio = the highest section's PCU utilization / 100
(``allocation_ratio_section_max``): the statistic of the DABench-LLM authors' own SN30 table (its column "Highest pcu
utilization", ``sambaNova/sambanova_results.numbers`` in ``augustuszzq/Regular-DABench-LLM``), so Paper B's claim is
judged on it. Beside it, the latency-weighted mean of the sections' PCU utilization (the RDU runs sections one after
another: the share of the PCUs busy over the run) is ``allocation_ratio_latency_weighted``. LI is over sections'
measured latencies (the paper reports O3 balance falling as layers grow). ``--`` and other no-figure cells are missing
values (that chip's value is left out; a section with no latency on any chip is left out of the balance and counted),
never zeros.
Assumed (not shown in the docs' text): utilization cells are percents with or without a ``%`` sign; numbers may
carry thousands separators; header names are matched ignoring case and surrounding spaces; without ``chip_id``
the rows of one ``section_id`` are taken as that section's chips (its slowest latency, their mean utilization).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance
from pytest_genai.dabench.readers import DataflowProfile, LayoutError, parse_cell

LATENCY_S = "measured latency (sec)"
LATENCY_CYCLES = "measured latency (cycles)"
PCU_UTIL = "measured pcu utilization"
PMU_UTIL = "measured pmu utilization"
DDR_TOTAL = "measured ddr total bw, gb/s"
REQUIRED = ("section_id", PCU_UTIL)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def parse_section_report(text: str, *, li_definition: str = "mean_over_max",
                         source: str = "section_report.csv") -> DataflowProfile:
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff")))  # a BOM made the first column unknown
    if reader.fieldnames is None:
        raise LayoutError(source, 1, "a CSV header row (the SambaTune section report is empty)")
    columns = {name.strip().lower(): name for name in reader.fieldnames}
    for need in REQUIRED:
        if need not in columns:
            raise LayoutError(source, 1, f"a column {need!r}", ", ".join(sorted(columns)))
    latency_col = LATENCY_S if LATENCY_S in columns else LATENCY_CYCLES if LATENCY_CYCLES in columns else None
    if latency_col is None:
        raise LayoutError(source, 1, f"a column {LATENCY_S!r} or {LATENCY_CYCLES!r}", ", ".join(sorted(columns)))
    width = len(reader.fieldnames)

    # section id -> chip -> {column: value or None}
    sections: dict[str, dict[str, dict[str, float | None]]] = {}
    for row in reader:
        line = reader.line_num
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        if None in row or any(v is None for v in row.values()):
            raise LayoutError(source, line, f"{width} cells as in the header", ",".join(map(str, row.values())))
        section = row[columns["section_id"]].strip()
        chip = row[columns["chip_id"]].strip() if "chip_id" in columns else str(line)
        if chip in sections.setdefault(section, {}):
            raise LayoutError(source, line, f"one row per (section, chip); section {section} chip {chip} repeats")
        sections[section][chip] = {
            col: parse_cell(row[columns[col]], field=f"{source}:{line}: section {section} chip {chip}: {col}")
            for col in (latency_col, PCU_UTIL, PMU_UTIL, DDR_TOTAL) if col in columns
        }
    if not sections:
        raise LayoutError(source, None, "at least one section row after the header")

    latencies, pcu, pmu, ddr, ddr_bytes, no_latency = [], [], [], [], [], 0
    chips = {chip for per_chip in sections.values() for chip in per_chip}
    for per_chip in sections.values():
        def values(col: str) -> list[float]:
            return [v[col] for v in per_chip.values() if v.get(col) is not None]

        lat = values(latency_col)
        if not lat:
            no_latency += 1
            continue
        latencies.append(max(lat))
        pcu.append(_mean([u / 100.0 for u in values(PCU_UTIL)]))
        pmu.append(_mean([u / 100.0 for u in values(PMU_UTIL)]))
        ddr.append(sum(values(DDR_TOTAL)) if values(DDR_TOTAL) else None)
        # bytes each chip moved: its own bandwidth over its own latency (the section's, a chip without one)
        ddr_bytes.append(sum(v[DDR_TOTAL] * 1e9 * (v.get(latency_col) if v.get(latency_col) is not None else max(lat))
                             for v in per_chip.values() if v.get(DDR_TOTAL) is not None) if values(DDR_TOTAL) else None)
    if not latencies:
        raise LayoutError(source, None, f"a figure in {latency_col!r} for at least one section (all are missing)")
    total = sum(latencies)
    if total <= 0:
        raise LayoutError(source, None, "a positive section latency (all are 0)")

    def weighted(xs: list[float | None]) -> float | None:
        pairs = [(x, t) for x, t in zip(xs, latencies) if x is not None]
        weight = sum(t for _, t in pairs)
        return sum(x * t for x, t in pairs) / weight if weight > 0 else None

    extra = {"sections": float(len(sections)), "chips": float(len(chips)),
             "sections_without_latency": float(no_latency)}
    section_max = max((x for x in pcu if x is not None), default=None)
    latency_weighted = weighted(pcu)
    if (pmu_w := weighted(pmu)) is not None:
        extra["pmu_utilization_time_weighted"] = pmu_w
    if any(x is not None for x in ddr):
        extra["ddr_total_bw_gbs_time_weighted"] = weighted(ddr)
        # the run's own DDR ceiling: the highest section bandwidth, summed over the chips (so over len(chips) RDUs)
        extra["ddr_total_bw_gbs_max"] = max(x for x in ddr if x is not None)
        if latency_col == LATENCY_S:
            # Bytes each section moved to and from DDR: each chip's measured bandwidth over its measured latency.
            extra["ddr_total_bytes"] = sum(b for b in ddr_bytes if b is not None)
    if latency_col == LATENCY_S:
        extra["total_latency_s"] = total
    return DataflowProfile(
        vendor="sambanova",
        source_format="SambaTune reports/section_report.csv",
        allocation_ratio=section_max,
        allocation_units="PCU utilization of the highest section (SambaTune measured PCU utilization)",
        load_imbalance=load_imbalance(latencies, li_definition),
        li_definition=LI_DEFINITIONS[li_definition],
        li_subtasks=f"sections ({latency_col}; one per section, the slowest of its {len(chips)} chip(s))",
        subtask_loads=tuple(latencies),
        extra=extra,
        allocation_statistic="section_max",
        other_allocations={} if latency_weighted is None else {"latency_weighted": latency_weighted},
    )


def read_section_report(path: str | Path, root: str | Path | None = None, **kwargs: str) -> DataflowProfile:
    """Read ``path`` (:func:`~pytest_genai.dabench.readers.read_vendor_text`: UTF-8, never through a link out of
    ``root``)."""
    from pytest_genai.dabench.readers import read_vendor_text

    return parse_section_report(read_vendor_text(path, root), source=str(path), **kwargs)
