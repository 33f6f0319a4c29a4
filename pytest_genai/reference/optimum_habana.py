"""optimum-habana's CI baselines as reference rows.

The baselines file maps each example test to the numbers its CI reached per Gaudi generation; the settings behind a
number come from a per-model file of ``tests/configs/examples``, only where one dataset has the row's distribution.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

from pytest_genai.reference.row import Provenance, ReferenceRow

#: optimum-habana's generation keys -> the suite's device generations (devices/data/specs.toml).
GENERATIONS = {"gaudi1": "gaudi", "gaudi2": "gaudi2", "gaudi3": "gaudi3"}
#: Cards per distribution, as optimum-habana's tests/test_examples.py launches them.
CARDS = {"single_card": 1, "multi_card": 8, "deepspeed": 8}
#: Causal language-model training scripts: the rows Paper A's fine-tuning claims (A2) read as LLM fine-tuning.
FINETUNE_EXAMPLES = ("run_clm", "run_lora_clm", "sft", "dpo", "ppo", "reward_modeling", "run_prompt_tuning_clm")
#: The file's metric names -> the suite's (name, unit).
METRICS = {
    "train_samples_per_second": ("samples_per_s", "samples/s"),
    "train_runtime": ("train_runtime_s", "s"),
    "perplexity": ("perplexity", "1"),
}
#: Settings every row needs and the baselines file itself never states.
SETTINGS = ("batch_per_card", "seq_len", "precision", "max_steps")


class ReferenceFormatError(ValueError):
    """A published file does not have the shape its reader expects."""


def split_test(test_id: str) -> tuple[str, str, str]:
    """``Class::test_run_lora_clm_llama-7b_single_card`` -> (example, model, distribution)."""
    name = test_id.rsplit("::", 1)[-1]
    for distribution in CARDS:
        if name.endswith(f"_{distribution}"):
            body = name[: -len(distribution) - 1]
            break
    else:
        raise ReferenceFormatError(f"test {test_id!r}: name ends in none of {', '.join(CARDS)}; the reader knows "
                                   "only those distributions")
    if not body.startswith("test_") or "_" not in body[5:]:
        raise ReferenceFormatError(f"test {test_id!r}: expected test_<example>_<model>_<distribution>")
    example, model = body[5:].rsplit("_", 1)
    return example, model, distribution


def _lines(text: str) -> dict[tuple[str, str], int]:
    """(test id, generation key) -> the 1-based line of its samples/s (of its generation where it has none)."""
    out: dict[tuple[str, str], int] = {}
    test = gen = None
    for number, line in enumerate(text.splitlines(), 1):
        m = re.match(r'^  "([^"]+)": \{', line)
        if m:
            test, gen = m.group(1), None
            continue
        m = re.match(r'^    "([^"]+)": \{', line)
        if m and test:
            gen = m.group(1)
            out[(test, gen)] = number
        elif gen and test and '"train_samples_per_second"' in line:
            out[(test, gen)] = number
    return out


def read_settings(config: Mapping[str, Any], generation_key: str, distribution: str) -> tuple[dict[str, Any], str]:
    """The stated settings of ``distribution`` on ``generation_key`` and their dataset; empty unless one dataset has it."""
    found = [(name, entry["distribution"][distribution]) for name, entry in (config.get(generation_key) or {}).items()
             if isinstance(entry, dict) and distribution in (entry.get("distribution") or {})]
    if len(found) != 1:
        return {}, ""
    dataset, setup = found[0]
    args = " ".join(setup.get("extra_arguments") or [])
    settings: dict[str, Any] = {"dataset": dataset}
    if isinstance(setup.get("train_batch_size"), int):
        settings["batch_per_card"] = setup["train_batch_size"]
    for flag, key in (("max_steps", "max_steps"), ("max_seq_length", "seq_len"),
                      ("gradient_accumulation_steps", "grad_accum"), ("lora_rank", "lora_rank")):
        m = re.search(rf"--{flag}[ =](\d+)", args)
        if m:
            settings[key] = int(m.group(1))
    if re.search(r"--fp8\b", args):
        settings["precision"] = "fp8"
    elif re.search(r"--bf16\b", args):
        settings["precision"] = "bf16"
    return settings, dataset


def read_baselines(text: str, provenance: Provenance,
                   configs: Mapping[str, tuple[Mapping[str, Any], Provenance]] | None = None) -> list[ReferenceRow]:
    """Every (test, generation) of a baselines file as a :class:`ReferenceRow`; ``configs``: model file stem
    (``llama_7b``) -> (its parsed config, where it was published), for the settings."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReferenceFormatError(f"{provenance.path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ReferenceFormatError(f"{provenance.path}: expected an object of test id -> generation -> metrics")
    lines = _lines(text)
    rows = []
    for test_id, by_gen in data.items():
        example, model, distribution = split_test(test_id)
        stem = re.sub(r"[-.]", "_", model)
        config, config_where = (configs or {}).get(stem, ({}, None))
        for gen_key, values in by_gen.items():
            if gen_key not in GENERATIONS:
                raise ReferenceFormatError(f"{provenance.path}: test {test_id!r}: generation {gen_key!r} is none of "
                                           f"{', '.join(GENERATIONS)}; add it to GENERATIONS")
            metrics, units = {}, {}
            for name, value in values.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                ours, unit = METRICS.get(name, (name, "1"))
                metrics[ours], units[ours] = float(value), unit
            settings, dataset = read_settings(config, gen_key, distribution)
            note = ""
            if config_where is not None and settings:
                note = f"settings from {config_where.path}@{config_where.commit[:12]} ({gen_key}, {dataset})"
            elif config_where is not None:
                note = f"{config_where.path} has no single {distribution} dataset on {gen_key}: settings unstated"
            rows.append(ReferenceRow(
                row_id=test_id.split("::", 1)[-1] if test_id.startswith("tests/") else test_id,
                experiment="finetune" if example in FINETUNE_EXAMPLES else "other",
                model=model, task=example, device_kind="hpu", generation=GENERATIONS[gen_key],
                cards=CARDS[distribution],
                identity={"publisher": "optimum-habana", "test": test_id, "example": example,
                          "distribution": distribution, "cards": CARDS[distribution]},
                settings=settings,
                unstated=tuple(s for s in SETTINGS if s not in settings),
                metrics=metrics, units=units,
                provenance=Provenance(provenance.source, provenance.repository, provenance.path, provenance.commit,
                                      lines.get((test_id, gen_key), 0), provenance.date),
                note=note,
            ))
    return rows
