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

    def key(self) -> tuple[str, str]:
        return self.row_id, self.generation

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
