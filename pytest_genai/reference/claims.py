"""``reference`` claims: a user's run against the vendor's published number for the same configuration.

A :class:`Counterpart` pairs a published row with the suite configuration that is the same workload; its claim asks
the run's metric to reach the published number times the publisher's own acceptance floor, and never fails a test.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping

from pytest_genai.claims.check import Verdict, check_value
from pytest_genai.claims.model import Claim
from pytest_genai.stats import median_interval
from pytest_genai.reference.row import ReferenceRow

#: The publisher's own acceptance floor, as a fraction of its number, and where it says so.
FLOORS = {
    "optimum-habana": (0.95, "optimum-habana's CI: train_samples_per_second >= (2 - TIME_PERF_FACTOR) x baseline, "
                             "TIME_PERF_FACTOR = 1.05 (tests/test_examples.py)"),
}
NO_FLOOR = (1.0, "the source states no tolerance: the published number itself")
#: A published precision -> the suite's ``precision`` that computes the same way (``--bf16`` is bf16 autocast).
SUITE_PRECISION = {"bf16": "amp"}
#: Published tasks that train LoRA adapters: their counterpart must be a LoRA run of the stated rank.
LORA_TASKS = ("run_lora_clm",)


@dataclasses.dataclass(frozen=True)
class Counterpart:
    """A published row and the suite configuration that runs the same workload."""

    row: ReferenceRow
    metric: str  # the metric both record (samples_per_s)
    where: Mapping[str, Any]  # config key -> value a run must have
    models: tuple[str, ...]
    lora_rank: int | None = None  # a LoRA row's rank: the run's ``lora.rank`` must equal it

    def lora_problem(self, config: Mapping[str, Any] | None) -> str | None:
        """Why ``config`` is not the row's LoRA run (the rank the row states), or None."""
        if self.lora_rank is None:
            return None
        lora = (config or {}).get("lora")
        rank = lora.get("rank") if isinstance(lora, Mapping) else None
        return None if rank == self.lora_rank else f"lora rank {rank!r}, the row trains rank {self.lora_rank}"

    @property
    def published(self) -> float:
        return self.row.metrics[self.metric]

    @property
    def floor(self) -> tuple[float, str]:
        return FLOORS.get(self.row.provenance.source, NO_FLOOR)

    def claim(self) -> Claim:
        fraction, why = self.floor
        slug = re.sub(r"[^A-Za-z0-9.]+", "_", self.row.row_id).strip("_")
        unstated = ", ".join(self.row.unstated) or "none"
        return Claim(
            id=f"ref.{self.row.provenance.source}.{slug}.{self.row.generation}", paper="reference",
            section=self.row.provenance.source, metric=self.metric, unit=self.row.units.get(self.metric, ""),
            direction="higher", min=self.published * fraction,
            paper_text=f"published {self.published:g} {self.row.units.get(self.metric, '')} "
                       f"({self.row.provenance.text()})",
            devices=(self.row.generation,), models=self.models, experiment=self.row.experiment,
            where=dict(self.where), basis="reference", timing=True,
            note=f"floor {fraction:g}x: {why}; settings the source leaves unstated: {unstated}"
                 + (f"; LoRA rank {self.lora_rank}" if self.lora_rank is not None else ""))


def counterparts(rows: Iterable[ReferenceRow]) -> list[Counterpart]:
    """The ``finetune`` rows whose batch per card and precision are stated, as counterparts of the suite's config."""
    out = []
    for row in rows:
        s = row.settings
        if row.experiment != "finetune" or "samples_per_s" not in row.metrics:
            continue
        if "batch_per_card" not in s or "precision" not in s or row.cards is None:
            continue
        where = {"micro_batch": s["batch_per_card"], "precision": SUITE_PRECISION.get(s["precision"], s["precision"]),
                 "world_size": row.cards}
        if "seq_len" in s:
            where["seq_len"] = s["seq_len"]
        rank = s.get("lora_rank") if row.task in LORA_TASKS else None
        out.append(Counterpart(row, "samples_per_s", where, (row.model,), rank))
    return out


def check_record(record: Any, counterpart: Counterpart, stall_share: float | None = None) -> Verdict | None:
    """The reference verdict of one run record, or None where the counterpart does not apply to it.
    ``stall_share``: the test's CPU contention, as :func:`~pytest_genai.claims.check.check_value` takes it."""
    claim = counterpart.claim()
    device = record.device
    ok, _why = claim.applies_to(device_kind=device.kind if device else None,
                                generation=device.generation if device else None, model=record.model,
                                experiment=record.experiment, config=record.config)
    if not ok or claim.metric not in record.metrics or counterpart.lora_problem(record.config):
        return None
    rounds = record.rounds.get(claim.metric)
    interval = median_interval(rounds) if rounds else None
    verdict = check_value(claim, record.metrics[claim.metric], interval, stall_share=stall_share)
    return dataclasses.replace(verdict, message=f"{verdict.message}; {ratio_text(record, counterpart)}")


def ratio_text(record: Any, counterpart: Counterpart) -> str:
    """``0.93x [0.90, 0.95] of the published 18.43 samples/s``: the run over the vendor's number."""
    published = counterpart.published
    value = record.metrics[counterpart.metric] / published
    rounds = record.rounds.get(counterpart.metric)
    span = ""
    if rounds:
        iv = median_interval(rounds)
        span = f" [{iv.lo / published:.2f}, {iv.hi / published:.2f}]"
    unit = counterpart.row.units.get(counterpart.metric, "")
    return f"{value:.2f}x{span} of the published {published:g} {unit} on {counterpart.row.generation}"


def check_run(run: Any, found: Iterable[Counterpart],
              stall_share: float | None = None) -> list[tuple[Any, Verdict]]:
    """Every (record, verdict) of ``run`` that has a published counterpart."""
    found = list(found)
    out = []
    for record in run.records:
        for counterpart in found:
            verdict = check_record(record, counterpart, stall_share)
            if verdict is not None:
                out.append((record, verdict))
    return out
