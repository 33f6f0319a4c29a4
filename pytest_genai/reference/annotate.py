"""A run file with its ``reference`` verdicts added to each matched benchmark's claims, for the report to show."""
from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping

from pytest_genai.results.runs import genai_of


def with_verdicts(doc: Mapping[str, Any], run: Any, found: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """A copy of ``doc`` (read as ``run``) with each ``found`` (record, verdict) in its benchmark's claims."""
    out = copy.deepcopy(dict(doc))
    index = {id(record): i for i, record in enumerate(run.records)}
    for record, verdict in found:
        genai = genai_of(out["benchmarks"][index[id(record)]])  # run read from doc: never None here
        device = record.device.generation if record.device else "-"
        entry = {**verdict.to_json(), "device": device, "nodeid": record.fullname}
        genai["claims"] = [c for c in genai.get("claims") or [] if c.get("id") != verdict.id] + [entry]
    return out
