"""Which paper-scale fine-tuning runs fit which accelerator: the fit planner's table for docs/finetune.md.

Paper A fine-tuned Llama-3.1-8B, Gemma-2-27B and Llama-3.3-70B on 8 devices. For each model, method (full
fine-tuning, LoRA as optimum-habana's recipe) and device, the table gives the strategy the planner recommends
(DDP whenever it fits, else the least sharding that fits) and the per-device GiB of DDP and ZeRO-3. Every number
is modeled (:mod:`pytest_genai.train.planner`); capacities are the specs table's (``mem_capacity_gb``, 10^9 B).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_genai.train.archs import PAPER_ARCHS
from pytest_genai.train.lora import LoraSpec
from pytest_genai.train.planner import Workload, plan

#: The devices of the table: (column title, generation in devices/data/specs.toml).
DEVICES = (("Gaudi2", "gaudi2"), ("Gaudi3", "gaudi3"), ("A100-80GB", "a100-sxm4-80gb"), ("H100", "h100-sxm"),
           ("H200", "h200"))
#: The paper's setting: 8 devices, one 2048-token sequence per device, bf16 with fp32 master weights and AdamW
#: (16 B per trained parameter), Flash Attention, 90% of the memory usable.
ASSUMPTIONS = {"world": 8, "micro_batch": 1, "seq_len": 2048, "precision": "mixed", "attention": "flash",
               "usable_fraction": 0.9}
GIB = 2**30


def workload(model: str, lora: LoraSpec | None) -> Workload:
    """The paper-scale workload of ``model``: full fine-tuning (``lora=None``) or LoRA with ``lora``."""
    a = ASSUMPTIONS
    extra: dict[str, Any] = {} if lora is None else lora.planner_kwargs()
    return Workload(PAPER_ARCHS[model], world=a["world"], micro_batch=a["micro_batch"], seq_len=a["seq_len"],
                    precision=a["precision"], attention=a["attention"], **extra)


def fit_rows(capacities: Mapping[str, int], lora: LoraSpec = LoraSpec(),
             models: Sequence[str] = tuple(PAPER_ARCHS)) -> list[list[str]]:
    """One row per (model, method): model, method, DDP GiB, ZeRO-3 GiB, then per device (``capacities``: column
    title -> bytes) the recommended strategy or ``none``."""
    rows = []
    for model in models:
        for method, spec in (("full", None), ("lora", lora)):
            w = workload(model, spec)
            plans = [plan(w, cap, ASSUMPTIONS["usable_fraction"]) for cap in capacities.values()]
            first = plans[0]
            rows.append([model, method if spec is None else f"lora r{spec.rank} ({'/'.join(spec.targets)})",
                         f"{first.estimate('ddp').total / GIB:.1f}", f"{first.estimate('zero3').total / GIB:.1f}",
                         *[p.recommended or "none" for p in plans]])
    return rows


def spec_capacities() -> dict[str, int]:
    """Column title -> device memory in bytes, from the specs table."""
    from pytest_genai.devices.specs import get_spec

    return {title: int(get_spec(gen).mem_capacity_gb * 1e9) for title, gen in DEVICES}


def fit_table_markdown(capacities: Mapping[str, int] | None = None, lora: LoraSpec = LoraSpec()) -> str:
    """The table as Markdown (what docs/finetune.md shows; a test keeps the two equal)."""
    from pytest_genai.tables import make_table

    capacities = spec_capacities() if capacities is None else capacities
    headers = ["model", "method", "DDP GiB/device", "ZeRO-3 GiB/device",
               *[f"{t} ({c / 1e9:g} GB)" for t, c in capacities.items()]]
    rows = fit_rows(capacities, lora)
    return make_table(headers, rows, numeric=[False, False, True, True] + [False] * len(capacities)).to_markdown()
