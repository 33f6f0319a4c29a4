"""One published measurement: what was measured, on what, with which settings, and where it was published.

A setting the publisher did not state is named in :attr:`ReferenceRow.unstated` and never filled in.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

#: A row's number is a vendor's published measurement: the metric source every reference run carries.
REFERENCE_SOURCE = "reference"


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a number was published: a repository file at a commit and line, or a page and table with its date."""

    source: str  # the source's name in :data:`pytest_genai.reference.sources.SOURCES`
    repository: str
    path: str
    commit: str
    line: int
    date: str  # the commit's date (ISO 8601)
    table: str = ""  # the table's heading, where the file holds several

    def text(self) -> str:
        where = f"{self.repository}/{self.path}@{self.commit[:12]} line {self.line}"
        return f"{where} ({self.table}, {self.date[:10]})" if self.table else f"{where} ({self.date[:10]})"


@dataclasses.dataclass(frozen=True)
class ReferenceRow:
    """One published number for one configuration on one device generation."""

    row_id: str  # the publisher's own name of the row (a test id, a table's model and task)
    experiment: str  # the suite experiment it corresponds to (``finetune``), or ``other`` where none does
    model: str
    task: str
    device_kind: str
    generation: str
    cards: int | None
    identity: Mapping[str, Any]  # what the workload is: the same across generations of one published row
    settings: Mapping[str, Any]  # how this generation's run was set (batch, sequence, precision): stated only
    unstated: tuple[str, ...]  # settings the source leaves unstated for this row
    metrics: Mapping[str, float]
    units: Mapping[str, str]
    provenance: Provenance
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RowFormatError(ValueError):
    """A rows file (``reference list --json``'s shape) that cannot be read."""


def rows_from_json(obj: Any, where: str) -> list[ReferenceRow]:
    """Rows written by ``pytest-genai reference list --json`` (or by hand in its shape) read back."""
    if not isinstance(obj, list):
        raise RowFormatError(f"{where}: expected a JSON list of rows, as `pytest-genai reference list --json` writes")
    out = []
    for i, entry in enumerate(obj):
        try:
            prov = Provenance(**entry["provenance"])
            fields = {**entry, "provenance": prov, "unstated": tuple(entry.get("unstated") or ())}
            out.append(ReferenceRow(**fields))
        except (KeyError, TypeError) as exc:
            raise RowFormatError(f"{where}: row #{i + 1}: {exc}; write rows in the shape of "
                                 "`pytest-genai reference list --json`") from None
    return out
