"""``--format csv|json`` text for ``compare`` and ``gate``: the Markdown's rows with raw, unrounded numbers."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any, Callable, Mapping, Sequence

from pytest_genai.tables import format_number, visible

from .compare import Comparison, MetricComparison

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%?|[+-]?inf|nan")


def csv_cell(value: Any) -> Any:
    """One CSV cell: None empty, a float exact, text visible and ``'``-prefixed where it would be a formula (OWASP)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if not isinstance(value, str):
        return value
    text = visible(value)
    return "'" + text if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text) else text


def csv_text(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """RFC 4180 CSV (``\\n`` line ends), each cell :func:`csv_cell`."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([csv_cell(v) for v in row] for row in [headers, *rows])
    return out.getvalue()


def json_text(obj: Any) -> str:
    """Indented JSON; nan and infinities (which JSON lacks) written as the strings "nan", "inf", "-inf"."""
    def clean(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        if isinstance(o, float) and not math.isfinite(o):
            return format_number(o)  # "nan", "inf" or "-inf"
        return o

    return json.dumps(clean(obj), indent=2) + "\n"


COMPARISON_COLUMNS = ("benchmark", "experiment", "baseline_device", "current_device", "metric", "unit", "source",
                      "baseline", "current", "ratio", "change", "direction", "limit", "status", "verdict", "basis",
                      "interval_lo", "interval_hi", "interval_level", "rounds", "note")


def comparison_rows(comparison: Comparison, where: Callable[[MetricComparison], bool] | None = None
                    ) -> list[dict[str, Any]]:
    """One dict per (matched benchmark, metric) that ``where`` keeps, with the columns :data:`COMPARISON_COLUMNS`."""
    return [dict(zip(COMPARISON_COLUMNS, (
        pc.pair.current.label, pc.pair.current.experiment,
        *(r.device.generation if r.device else None for r in (pc.pair.baseline, pc.pair.current)), mc.metric, mc.unit,
        mc.source, mc.baseline, mc.current, mc.ratio, mc.change, mc.direction, mc.max_regression, mc.status, mc.verdict,
        mc.basis if mc.gated else None, *((mc.interval or {}).get(k) for k in ("lo", "hi", "level", "n")),
        mc.note or None))) for pc in comparison.pairs for mc in pc.metrics if where is None or where(mc)]


def rows_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    return csv_text(COMPARISON_COLUMNS, [[r.get(c) for c in COMPARISON_COLUMNS] for r in rows])
