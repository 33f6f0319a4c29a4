"""The terminal summary's closing tables: claim verdicts and each benchmark's main metric."""
from __future__ import annotations

import collections
from typing import Any, Iterable, Mapping

from pytest_genai.results.runs import genai_of, recorded_metrics
from pytest_genai.tables import bound_text, text_table


BASIS_ORDER = {"paper": 0, "physics": 1, "target": 2, "reference": 3}


def claims_table(verdicts: list[dict[str, Any]], not_applicable: int = 0) -> list[str]:
    """The closing table of claim verdicts, paper claims first."""
    rows = []
    for v in sorted(verdicts, key=lambda v: BASIS_ORDER.get(v.get("basis", "paper"), 3)):
        measured, stall, iv = v.get("measured"), v.get("cpu_stall"), v.get("interval")
        level = (iv or {}).get("level")
        shown = f"{level:.0%} " if isinstance(level, (int, float)) else ""
        rows.append([v["id"], v.get("basis", "paper"), v.get("device", "-"),
                     "-" if measured is None else f"{measured:.4g}",
                     f"{shown}[{iv['lo']:.4g}, {iv['hi']:.4g}] n={iv['n']}" if iv else "-",
                     bound_text(v.get("min"), v.get("max")),
                     v["verdict"].upper() + (f" (CPU stall {stall:.0%})" if stall is not None else ""),
                     v.get("nodeid", "").split("::")[-1]])
    lines = text_table(["claim", "basis", "device", "measured", "interval (level)", "bound", "verdict", "test"], rows)
    counts = collections.Counter(f"{v.get('basis', 'paper')} {v['verdict']}" for v in verdicts)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    lines.append(f"{len(verdicts)} claim checks ({summary}); {not_applicable} not_applicable checks not shown "
                 "(scoped to another device, model or config; listed in each benchmark's JSON)")
    return lines


def contention_line(records: Iterable[Mapping[str, Any]]) -> str | None:
    """The run's contention, one line (:func:`pytest_genai.claims.check.contention_note`), or None when idle."""
    from pytest_genai.claims.check import contended_share, contention_note

    records = list(records)
    names = [record.get("fullname", record.get("name", "?")) for record in records]
    shares = [contended_share((genai_of(record) or {}).get("attachments")) for record in records]
    return contention_note({name: share for name, share in zip(names, shares) if share is not None}, len(records))


def main_metric(metrics: Mapping[str, Any]) -> str | None:
    """A benchmark's main metric: its quality, else its throughput, else its first one (None without any)."""
    from pytest_genai.results.registry import QUALITY_METRICS, THROUGHPUT_METRICS

    return next((name for name in QUALITY_METRICS + THROUGHPUT_METRICS if name in metrics), next(iter(metrics), None))


def metrics_table(records: Iterable[Mapping[str, Any]], registry: Mapping[str, Any] | None = None,
                  walls: Mapping[str, float] | None = None) -> list[str]:
    """One row per benchmark: its main metric, and the test's wall seconds from ``walls`` by node id."""
    rows, walls = [], walls or {}
    for record in records:
        wall_text = "-" if (wall := walls.get(record.get("fullname", ""))) is None else f"{wall:.1f}"
        genai = genai_of(record) or {}
        measured = recorded_metrics(genai)
        name, device = main_metric(measured), (genai.get("device") or {}).get("generation", "-")
        if name is None:
            rows.append([record.get("name", "?"), device, "-", "-", "", "no metric recorded", wall_text])
            continue
        m, value = measured[name], measured[name].value
        unit = m.unit or getattr((registry or {}).get(name), "unit", "") or ""
        shown = f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        rows.append([record.get("name", "?"), device, name, shown, "" if unit == "1" else unit,
                     m.source or "measured", wall_text])
    total = sum(walls.values())
    return text_table(["benchmark", "device", "main metric", "value", "unit", "source", "wall [s] (measured)"], rows) + [
        f"wall time: {total:.1f} s in all tests' setup, call and teardown (measured), of which {len(rows)} benchmarks "
        f"{sum(walls.get(r.get('fullname', ''), 0.0) for r in records):.1f} s"]
