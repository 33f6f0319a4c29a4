"""``reference`` verdicts in a session, as ``pytest-genai reference check`` judges a run file; never a failed test."""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Mapping

ROWS_ENV = "GENAI_REFERENCE_ROWS"


class ReferenceRowsError(ValueError):
    """A rows file named by ``GENAI_REFERENCE_ROWS`` that cannot be read."""


@functools.lru_cache(maxsize=8)
def _counterparts(extra: str) -> tuple[Any, ...]:
    from pytest_genai.reference import sources
    from pytest_genai.reference.claims import counterparts
    from pytest_genai.reference.row import RowFormatError, rows_from_json

    rows = [row for name in sources.SOURCES for row in sources.load(name)]
    for path in filter(None, extra.split(os.pathsep)):
        try:
            rows += rows_from_json(json.loads(Path(path).read_text(encoding="utf-8")), path)
        except (OSError, ValueError, RowFormatError) as exc:
            raise ReferenceRowsError(f"{ROWS_ENV}={extra}: {exc}; name files written by "
                                     "`pytest-genai reference list --json` (or unset it)") from None
    return tuple(counterparts(rows))


def reference_verdicts(genai: Mapping[str, Any], name: str, stall_share: float | None, extra: str) -> list[Any]:
    """The verdicts of the shipped rows and ``extra``'s (``GENAI_REFERENCE_ROWS``'s value) on one benchmark."""
    found = [c for c in _counterparts(extra) if c.row.experiment == genai.get("experiment")]
    if not found or not genai.get("metrics"):
        return []
    from pytest_genai.reference.claims import check_run
    from pytest_genai.results.runs import benchmark_json, run_from_json

    run = run_from_json({"benchmarks": [benchmark_json(name, dict(genai))]}, name)
    return [verdict for _record, verdict in check_run(run, found, stall_share)]
