"""Readers for the dataflow vendors' profiling outputs, into one allocation / load-imbalance schema.

Each reader names the documented format it was written against (module docstrings) and which fields are read.

* :mod:`.cerebras`  — ``compile_report.txt`` of the Cerebras compiler (WSE): Active PEs, Compute Utilization, kernels.
* :mod:`.sambanova` — SambaTune ``reports/section_report.csv`` (RDU): per-section PCU/PMU utilization and latency.
* :mod:`.graphcore` — PopVision ``profile.pop`` through the PopVision Analysis Library ``pva`` (IPU): tiles used,
  memory per IPU.
* :mod:`.runlog`    — Level-2 run logs of the three vendors' model zoos: throughput, precision, chips, layers.

No-figure cells (``--``) are missing values; a file in an unknown layout raises :class:`LayoutError` (file, line,
what was expected).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class DataflowProfile:
    """Allocation and balance of one compiled workload, as a vendor profile states them.

    ``allocation_ratio``: on-chip units used / available (fraction), or None when the format does not state it.
    ``load_imbalance``: LI over ``subtask_loads`` (per ``li_subtasks``), named by ``li_definition``.
    ``allocation_statistic``: how ``allocation_ratio`` was taken from the format's figures, when it is one statistic
    of several per-part figures (``section_max``: the highest section's); None when the format states one figure for
    the whole chip. The recorded metric is ``allocation_ratio_<statistic>`` then, so the name says which it is.
    ``other_allocations``: the same units' ratio by other statistics (``latency_weighted``: the sections' mean
    weighted by their latency), recorded as ``allocation_ratio_<statistic>`` beside it.
    ``extra``: further numeric fields the format gives (fractions or the format's units, named with the unit).
    """

    vendor: str
    source_format: str
    allocation_ratio: float | None
    allocation_units: str
    load_imbalance: float | None
    li_definition: str
    li_subtasks: str
    subtask_loads: tuple[float, ...]
    extra: Mapping[str, float] = dataclasses.field(default_factory=dict)
    allocation_statistic: str | None = None
    other_allocations: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def allocation_metric(self) -> str:
        """The metric name ``allocation_ratio`` is recorded under: it names the statistic where there are several."""
        return "allocation_ratio" + (f"_{self.allocation_statistic}" if self.allocation_statistic else "")

    def __post_init__(self) -> None:
        checks = [("allocation_ratio", self.allocation_ratio), ("load_imbalance", self.load_imbalance),
                  *((f"other_allocations[{k!r}]", v) for k, v in self.other_allocations.items())]
        for name, value in checks:
            if value is not None and not (math.isfinite(value) and 0 <= value <= 1.0 + 1e-9):
                raise ValueError(f"DataflowProfile.{name} must be a fraction in [0, 1], got {value!r}")


_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?$")
#: Cells the vendors print where a figure does not apply or was not estimated ("--" in Cerebras compile reports).
MISSING_CELLS = frozenset({"", "-", "--", "---", "n/a", "na", "none", "null", "nan", "?"})


LAYOUT_HINT = "a newer or unknown layout of this file? see docs/dabench.md"


class LayoutError(ValueError):
    """A vendor file in a layout this reader does not know: names the file, the line and what was expected.

    ``hint`` (in parentheses at the end) says what to do; by default that the layout may be a newer or unknown one.
    """

    def __init__(self, source: str, line: int | None, expected: str, found: str = "", *,
                 hint: str = LAYOUT_HINT) -> None:
        where = f"{source}:{line}" if line is not None else source
        message = f"{where}: expected {expected}"
        if found:
            message += f", found {found[:120]!r}"
        super().__init__(message + f" ({hint})")
        self.source, self.line, self.expected = source, line, expected


class RunFailed(LayoutError):
    """A run log in a known layout whose run did not complete (interrupted, cancelled, never trained, environment
    not installed): it has no throughput, and the message names the failure the log states, not a layout problem.
    A memory or compile failure is not this: that is a capacity result (``VendorRunLog.failure``)."""

    def __init__(self, source: str, line: int | None, failure: str, found: str, fix: str) -> None:
        stated = f"; the log states {failure}" + (f": {found.strip()[:160]!r}" if found else "")
        super().__init__(source, line, "a completed training run" + stated, hint=fix)
        self.failure = failure


def parse_cell(text: str | None, *, field: str) -> float | None:
    """A table cell: a number (as :func:`parse_number` reads it), or None for ``--`` and any other non-numeric cell
    (``n/a``, ``pending``...). Missing is never 0 and never an error: a kernel with no estimate is left out of sums
    and balance, and counted as missing. (A file in another layout is caught by its header, not by its cells.)
    """
    if text is None or text.strip().rstrip("%").strip().lower() in MISSING_CELLS:
        return None
    try:
        return parse_number(text, field=field)
    except ValueError:
        return None


def parse_number(text: str, *, field: str) -> float:
    """A number as vendor reports print it: thousands separators allowed, optional trailing ``%`` kept as percent."""
    s = text.strip().rstrip("%").strip()
    if not s or not _NUMBER.match(s):
        raise ValueError(f"field {field!r}: {text!r} is not a number")
    return float(s.replace(",", ""))


def read_vendor_text(path: str | Path, root: str | Path | None = None, *, lenient: bool = False) -> str:
    """The text of the vendor file ``path``, read as UTF-8 (a UTF-8 BOM dropped): a :class:`LayoutError` naming the
    file for UTF-16, binary (NUL bytes) or invalid UTF-8 (``lenient``: invalid bytes replaced, as for console logs),
    and for a file reached through a link that leads outside ``root`` (the profiles folder): it is not read, and
    nothing of it is quoted."""
    path = Path(path)
    if root is not None:
        real, top = os.path.realpath(path), os.path.realpath(root)
        if os.path.commonpath([real, top]) != top:
            raise LayoutError(str(path), None, f"a file inside {root}", hint=f"it links outside that folder (to "
                              f"{real}); copy the file into the folder instead of linking to it")
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LayoutError(str(path), None, "a UTF-8 text file", "UTF-16 text",
                          hint="convert it to UTF-8, e.g. iconv -f UTF-16 -t UTF-8")
    if b"\x00" in data[:65536]:
        raise LayoutError(str(path), None, "a UTF-8 text file", "binary data (NUL bytes)",
                          hint="give the vendor's text output, not a binary file")
    try:
        return data.decode("utf-8-sig", errors="replace" if lenient else "strict")
    except UnicodeDecodeError as exc:
        raise LayoutError(str(path), None, "a UTF-8 text file", f"an invalid byte at offset {exc.start}",
                          hint="convert it to UTF-8") from None
