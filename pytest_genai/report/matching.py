"""Pairing the benchmarks of two runs by (experiment, config identity, model), then by device; never node id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pytest_genai.identity import differences
from pytest_genai.results.errors import ReportInputError
from pytest_genai.results.runs import Record, Run
from pytest_genai.tables import group_by


@dataclass(frozen=True)
class Pair:
    baseline: Record
    current: Record


@dataclass(frozen=True)
class Matching:
    pairs: tuple[Pair, ...]
    only_baseline: tuple[Record, ...]
    only_current: tuple[Record, ...]


def _device(r: Record, fields: int = 3) -> object:
    """The record's device as (kind, generation, name), cut to its first ``fields``; None without one."""
    return None if r.device is None else (r.device.kind, r.device.generation, r.device.name)[:fields]


def match_records(baseline: Sequence[Record], current: Sequence[Record]) -> Matching:
    """Pair ``baseline`` and ``current`` records; order follows the baseline, then new current entries."""
    groups: dict[tuple[str, str, str], tuple[list[Record], list[Record]]] = {}
    for side, records in enumerate((baseline, current)):
        for rec in records:
            groups.setdefault(rec.key, ([], []))[side].append(rec)
    pairs: list[Pair] = []
    for b, c in groups.values():  # what is left in them after pairing: only on that side
        if len(b) > 1 or len(c) > 1:
            for fields in (3, 2, 1):  # the exact device, then its generation, then its kind
                for rb in list(b):
                    candidates = [rc for rc in c if _device(rc, fields) == _device(rb, fields)]
                    if len(candidates) == 1 and sum(_device(x, fields) == _device(rb, fields) for x in b) == 1:
                        pairs.append(Pair(rb, candidates[0]))
                        b.remove(rb)
                        c.remove(candidates[0])
        if len(b) == 1 and len(c) == 1:
            pairs.append(Pair(b.pop(), c.pop()))
    return Matching(tuple(pairs), *(tuple(r for group in groups.values() for r in group[side]) for side in (0, 1)))


def nearest_difference(rec: Record, others: Sequence[Record], *, rec_is_current: bool = False) -> str:
    """How ``rec``'s identity differs from the closest of ``others`` (``n_examples 40 -> 80``); "" when none is."""
    test = rec.name.split("[", 1)[0]
    found = []
    for other in others:
        if other.experiment == rec.experiment and other.name.split("[", 1)[0] == test:
            base, cur = (other, rec) if rec_is_current else (rec, other)
            model = [f"model {base.model or '—'} -> {cur.model or '—'}"] if base.model != cur.model else []
            found.append(model + differences(base.config, cur.config))
    return "; ".join(min((lines for lines in found if lines), key=len, default=[]))


def duplicate_groups(records: Sequence[Record]) -> list[list[Record]]:
    """Groups (in first-seen order) of two or more records with the same key and the same device."""
    return [g for g in group_by(records, lambda r: (r.key, _device(r))).values() if len(g) > 1]


def check_unique(run: Run) -> None:
    """Raise :class:`ReportInputError` (one line, naming the file and the benchmarks) when ``run`` holds duplicates."""
    groups = duplicate_groups(run.records)
    if not groups:
        return
    first = groups[0]
    rec, more, others = first[0], len(first) - 2, len(groups) - 1
    device = rec.device.label if rec.device is not None else "no device"
    what = (f"the same test name and parameter ({rec.key[0].split(':', 1)[1]}, {rec.key[1] or 'no parameter'})"
            if rec.experiment is None else
            f"the same experiment {rec.experiment!r}, model {rec.model!r}, config {rec.config_key} and device {device}")
    names = " and ".join(f"{r.name!r} ({r.fullname})" if r.fullname and r.fullname != r.name else repr(r.name)
                         for r in first[:2])
    extra = (f" (and {more} more with that key)" if more else "") + (
        f"; {others} more duplicated key(s) in this file" if others else "")
    raise ReportInputError(
        f"{run.source}: benchmarks {names} have {what}, so they cannot be paired with another run{extra} — "
        "give each a distinct config (e.g. an 'id' entry) or model, or keep only one of them")
