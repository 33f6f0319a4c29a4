"""Plain-text tables for the terminal summary."""
from __future__ import annotations

from typing import Any, Iterable, Sequence


def text_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    rows = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]


def _bound(v: dict[str, Any]) -> str:
    lo, hi = v.get("min"), v.get("max")
    if lo is not None and hi is not None:
        return f"[{lo:g}, {hi:g}]"
    return f">= {lo:g}" if lo is not None else f"<= {hi:g}"


def claims_table(verdicts: list[dict[str, Any]]) -> list[str]:
    rows = []
    for v in verdicts:
        measured = v.get("measured")
        rows.append([v["id"], v.get("device", "-"), "-" if measured is None else f"{measured:.4g}", _bound(v),
                     v["verdict"].upper(), v.get("nodeid", "").split("::")[-1]])
    return text_table(["claim", "device", "measured", "bound", "verdict", "test"], rows)
