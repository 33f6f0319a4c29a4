"""Plain tables rendered as GitHub Markdown or HTML, and the number formats they use."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Sequence


def format_number(x: object) -> str:
    """Readable number: thousands separators for large values, 4 significant digits otherwise."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10_000 else str(x)
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 1e15 or ax < 1e-3:
        return f"{x:.3e}"
    if ax >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def format_change(change: float | None) -> str:
    """Relative change as a signed percentage (``+3.20%``); ``—`` when undefined."""
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return "—"
    if math.isinf(change):
        return "+inf" if change > 0 else "-inf"
    return f"{change * 100:+.2f}%"


@dataclass(frozen=True)
class Table:
    """A table of already-formatted cells; ``numeric`` marks right-aligned columns."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.headers):
                raise ValueError(f"table row {i} has {len(row)} cells for {len(self.headers)} headers")
        if self.numeric and len(self.numeric) != len(self.headers):
            raise ValueError(f"numeric has {len(self.numeric)} flags for {len(self.headers)} headers")

    def _right(self, i: int) -> bool:
        return bool(self.numeric) and self.numeric[i]

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown, columns padded so it also reads well in a terminal."""
        cells = [list(self.headers)] + [list(r) for r in self.rows]
        cells = [[_md_escape(c) for c in row] for row in cells]
        widths = [max(3, *(len(row[i]) for row in cells)) for i in range(len(self.headers))]
        lines = []
        for n, row in enumerate(cells):
            padded = [c.rjust(w) if self._right(i) and n else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
            lines.append("| " + " | ".join(padded) + " |")
            if n == 0:
                rule = [("-" * (w - 1) + ":") if self._right(i) else "-" * w for i, w in enumerate(widths)]
                lines.append("| " + " | ".join(rule) + " |")
        return "\n".join(lines)

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = []
        for row in self.rows:
            tds = "".join(
                f'<td class="num">{html.escape(c)}</td>' if self._right(i) else f"<td>{html.escape(c)}</td>"
                for i, c in enumerate(row)
            )
            body.append(f"<tr>{tds}</tr>")
        return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def _md_escape(cell: str) -> str:
    return cell.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def make_table(headers: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[bool] = ()) -> Table:
    """Build a :class:`Table`, formatting numbers with :func:`format_number`."""
    formatted = tuple(tuple(c if isinstance(c, str) else format_number(c) for c in row) for row in rows)
    return Table(tuple(headers), formatted, tuple(numeric))
