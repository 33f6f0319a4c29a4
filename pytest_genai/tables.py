"""The package's one table renderer (GitHub Markdown, HTML, terminal text) and the number formats it uses."""

from __future__ import annotations

import functools
import html
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar


MAX_ROW_CHARS = 160  # widest Markdown row a report writes (wider tables are split; long values are shortened)
MAX_VALUE_CHARS = 40  # longest config value a cell or a "same in every row" line shows; longer ones are cut


def format_number(x: object) -> str:
    """Readable number: 4 significant digits, thousands separators for large values, ``yes``/``no`` for booleans."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10_000 else str(x)
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 1e15 or ax < 1e-4:
        return f"{x:.3e}"
    if ax >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def bound_text(lo: object, hi: object, symbols: bool = False) -> str:
    """Bounds: ``[lo, hi]``, ``== x``, ``>= lo`` or ``<= hi`` (``≥``/``≤`` if ``symbols``), or ``—``."""
    ge, le = ("≥", "≤") if symbols else (">=", "<=")
    if lo is not None and hi is not None:
        return f"== {format_number(lo)}" if lo == hi else f"[{format_number(lo)}, {format_number(hi)}]"
    if lo is not None:
        return f"{ge} {format_number(lo)}"
    return "—" if hi is None else f"{le} {format_number(hi)}"


def shorten(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """``text`` cut in the middle with an ellipsis when longer than ``limit`` (both ends usually say the most)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


_PART_SEP = re.compile(r"([-@_])")
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def group_by(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """``items`` in lists by ``key``, in first-seen order."""
    out: dict[K, list[T]] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


def shorten_unique(labels: Sequence[str], limit: int) -> list[str]:
    """Each label :func:`shorten`-ed; labels that would then read alike are cut around where they first differ."""
    # the name parts every label has (none for under two different labels): eliding them loses nothing
    common = set.intersection(*(set(_PART_SEP.split(x)[::2]) for x in labels)) - {""} if len(set(labels)) > 1 else set()
    out = [shorten(_without_common(x, common, limit), limit) for x in labels]
    groups = group_by(zip(labels, out), lambda pair: pair[1])
    for i, (full, short) in enumerate(zip(labels, out)):
        others = {f for f, _ in groups[short]} - {full}
        if not others:
            continue
        differs = min(next((k for k, (a, b) in enumerate(zip(full, o)) if a != b), min(len(full), len(o)))
                      for o in others)
        start = max(0, min(differs - limit // 3, len(full) - (limit - 2)))
        end = start + limit - 2
        out[i] = ("…" if start > 0 else "") + full[start:end] + ("…" if end < len(full) else "")
    return out


def _without_common(label: str, common: set[str], limit: int) -> str:
    """``label`` with runs of ``common`` parts as ``…``, longest first, until it fits ``limit``."""
    if len(label) <= limit or not common:
        return label
    pieces = _PART_SEP.split(label)  # part, sep, part, sep, ..., part
    runs, start = [], None
    for i in range(0, len(pieces) + 2, 2):  # one step past the end closes a run that ends the label
        if i < len(pieces) and pieces[i] in common:
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i - 2))
            start = None
    runs.sort(key=lambda r: -sum(len(p) for p in pieces[r[0]:r[1] + 1]))
    elided: list[tuple[int, int]] = []
    for run in runs:
        if sum(len(p) for p in pieces[run[0]:run[1] + 1]) < 2:  # "…" saves nothing
            break
        elided.append(run)
        if len(_joined(pieces, elided)) <= limit:
            break
    return _joined(pieces, elided)


def _joined(pieces: Sequence[str], elided: Sequence[tuple[int, int]]) -> str:
    out, i = [], 0
    for a, b in sorted(elided):
        out += [*pieces[i:a], "…"]
        i = b + 1
    return "".join([*out, *pieces[i:]])


_LOCAL_PATH = re.compile(r"^(~|/|[A-Za-z]:[\\/]|\.{1,2}[\\/]|file:)")


def format_value(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A config value as configured (short floats), a nested config by ``id``, a local path by its last part."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        text = (format_value(value["id"], limit) if "id" in value
                else json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))
    elif isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            text = "/".join(value) if value else "[]"
        else:
            text = json.dumps(list(value), separators=(",", ":"), default=str)
    else:
        text = str(value)
    if _LOCAL_PATH.match(text):  # never a local path in a report: its last part
        text = re.split(r"[\\/]", text.rstrip("/\\"))[-1] or text
    return shorten(text, limit)


def distinct_parts(names: Sequence[str], sep: str = "-") -> list[str]:
    """``names`` without the ``sep``-separated parts all start or end with (``a-x-b``, ``a-y-b``: ``x``, ``y``)."""
    if len(set(names)) < 2:
        return list(names)
    parts = [n.split(sep) for n in names]
    shortest = min(len(p) for p in parts)
    head = 0
    while head < shortest - 1 and len({p[head] for p in parts}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head - 1 and len({p[len(p) - 1 - tail] for p in parts}) == 1:
        tail += 1
    return [sep.join(p[head:len(p) - tail]) for p in parts]


def modeled_mark(metric: str, source: str | None) -> str:
    """" (modeled)" for a modeled number whose name does not already say so (``*_modeled``, ``predicted_*``)."""
    return " (modeled)" if source and "modeled" in source and not ("modeled" in metric or "predicted" in metric) else ""


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

    @functools.cached_property
    def _md_layout(self) -> tuple[list[list[str]], list[int]]:
        """Escaped header and rows, and column widths, computed once (fitting a table asks several times)."""
        # `<script>` in a benchmark's name stayed raw HTML in a table cell, and `[x](y)` a link
        cells = [[one_line(visible(_MD_CELL.sub(lambda m: "\\" + m.group(), c))) for c in row]
                 for row in (self.headers, *self.rows)]
        return cells, [max(3, *(len(row[i]) for row in cells)) for i in range(len(self.headers))]

    def markdown_width(self) -> int:
        """Characters in each Markdown line of this table."""
        return sum(w + 3 for w in self._md_layout[1]) + 1

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown, columns padded so it also reads well in a terminal."""
        cells, widths = self._md_layout
        lines = []
        for n, row in enumerate(cells):
            padded = [c.rjust(w) if self._right(i) and n else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
            lines.append("| " + " | ".join(padded) + " |")
            if n == 0:
                rule = [("-" * (w - 1) + ":") if self._right(i) else "-" * w for i, w in enumerate(widths)]
                lines.append("| " + " | ".join(rule) + " |")
        return "\n".join(lines)

    def to_text(self) -> list[str]:
        """Terminal lines: columns left-aligned two spaces apart, a dashed rule under the headers, cells unescaped."""
        headers = [one_line(visible(h)) for h in self.headers]
        rows = [[one_line(visible(c)) for c in r] for r in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        return [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(visible(h))}</th>" for h in self.headers)
        body = []
        for row in self.rows:
            tds = "".join(
                f'<td class="num">{html.escape(visible(c))}</td>' if self._right(i) else
                f'<td class="v-{_VERDICT.match(c).group(1).lower()}">{html.escape(visible(c))}</td>'
                if _VERDICT.match(c) else f"<td>{html.escape(visible(c))}</td>"
                for i, c in enumerate(row)
            )
            body.append(f"<tr>{tds}</tr>")
        return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


#: A cell that is a verdict (``pass``, ``FAIL (CPU stall 46%)``): coloured in HTML by its class.
_VERDICT = re.compile(r"(pass|fail|inconclusive)\b", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # bidi controls reorder what follows
_LINE_BREAK = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")


def visible(text: str) -> str:
    """``text`` with control characters (but tab, line breaks) as ``\\xNN`` and bidi controls as ``\\uNNNN``."""
    text = _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(text: str) -> str:
    """``text`` with every line break (``\\r\\n``, ``\\r``, U+2028, ...) a space: a heading or a cell stays one line."""
    return _LINE_BREAK.sub(" ", text)


# `[` escaped is enough for no link or image to open, `<` for no HTML or autolink; `>` matters at a line's start only
_MD_SPECIAL = re.compile(r"[\\`*\[<#|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_inline(text: str) -> str:
    """``text`` as literal Markdown inline text (not ``_`` inside a word), :func:`visible`; line breaks are kept."""
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(), visible(text))


_BLOCK_START = re.compile(r"^(\s*)(?:([-+=>])|(\d+)([.)]))", re.MULTILINE)


def md_block_starts(text: str) -> str:
    """``text`` with a mark opening a line (``-``, ``+``, ``>``, ``=``, ``1.``) escaped: wrapped prose stays prose."""
    return _BLOCK_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2) else m.group(3) + "\\" + m.group(4)),
                            text)


# in a cell: `<x`, `</`, `<!`, `<?` open HTML or an autolink, `&x;` is an entity, `](` / `][` close a link; the rest
# stays as written, as the gate's terminal reads it (`< min 2.5`, `test_q[cpu]`)
_MD_CELL = re.compile(r"[\\|]|<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)|\](?=[(\[])")


def make_table(headers: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[bool] = ()) -> Table:
    """Build a :class:`Table`, formatting numbers with :func:`format_number`."""
    formatted = tuple(tuple(c if isinstance(c, str) else format_number(c) for c in row) for row in rows)
    return Table(tuple(headers), formatted, tuple(numeric))


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Terminal lines of a table (:meth:`Table.to_text`) whose cells are shown with ``str`` (``None`` as empty)."""
    return Table(tuple(headers), tuple(tuple("" if c is None else str(c) for c in row) for row in rows)).to_text()
