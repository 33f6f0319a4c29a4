"""The full-scale runs set as a published row: selected only at ``--genai-scale full``, and their records match that
row's counterpart (and only it) on the row's own device generation."""
from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_genai.identity import split_config
from pytest_genai.plugin.recorder import jsonable
from pytest_genai.reference import sources
from pytest_genai.reference.claims import check_run, counterparts
from pytest_genai.results.runs import run_from_json
from pytest_genai.train.archs import LLAMA_7B, get_arch
from pytest_genai.train.config import (OPTIMUM_HABANA_LLAMA_7B_LORA, REFERENCE_CONFIGS, benchmark_matrix,
                                       reference_config)

REF = OPTIMUM_HABANA_LLAMA_7B_LORA


def record_config(cfg, world: int) -> dict:
    """The identity benchmarks/test_finetune.py records for ``cfg`` (its config dict, split as genai.start splits it)."""
    config = {**{k: v for k, v in dataclasses.asdict(cfg).items() if (k, v) != ("init", "auto")}, "id": cfg.id,
              "weights": "random", "world_size": world, "nproc": world, "nnodes": 1, "sharded": cfg.sharded,
              "fits": True}
    return split_config(jsonable(config)).identity


def run_on(generation: str, config: dict, samples_per_s: float = 18.0):
    genai = {"schema": "pytest-genai/1", "experiment": "finetune",
             "device": {"kind": "hpu", "generation": generation, "name": generation}, "model": "llama-7b",
             "config": config, "metrics": {"samples_per_s": samples_per_s},
             "metric_sources": {"samples_per_s": "measured"}, "metric_units": {"samples_per_s": "samples/s"}}
    doc = {"benchmarks": [{"name": "test_finetune_throughput[hpu-llama-7b]", "extra_info": {"genai": genai}}]}
    return run_from_json(json.loads(json.dumps(doc)), f"{generation}.json")


def test_reference_configs_run_at_full_scale_only() -> None:
    assert REF.config in benchmark_matrix("full")
    for scale in ("tiny", "small"):
        assert not any(reference_config(c) for c in benchmark_matrix(scale))
    assert REF.config not in benchmark_matrix("full", ("full",))  # a LoRA row: not with full fine-tuning alone
    assert "random" in REF.config.id


def test_llama_7b_is_the_published_architecture() -> None:
    assert LLAMA_7B.param_count() == 6_738_415_616  # LLaMA-7B's parameter count, embeddings and head included
    assert get_arch("llama-7b") is LLAMA_7B
    assert get_arch("llama-7b", "tiny").hidden == 64


def test_the_config_states_what_the_published_row_states() -> None:
    rows = [r for r in sources.load("optimum-habana") if r.row_id.endswith("test_run_lora_clm_llama-7b_single_card")]
    stated = {r.generation: r.settings for r in rows if r.settings.get("batch_per_card") == REF.config.micro_batch}
    assert set(stated) == {"gaudi2", "gaudi3"}
    for settings in stated.values():
        assert settings["max_steps"] == REF.config.steps and settings["lora_rank"] == REF.config.lora.rank
        assert settings["precision"] == "bf16" and REF.config.precision == "amp"


@pytest.mark.parametrize("generation, published", [("gaudi2", 18.428), ("gaudi3", 29.824)])
def test_a_single_card_run_gets_the_verdict_of_its_generations_row(generation: str, published: float) -> None:
    found = check_run(run_on(generation, record_config(REF.config, 1)), counterparts(sources.load("optimum-habana")))
    [(_, verdict)] = found
    assert verdict.basis == "reference" and "llama_7b_single_card" in verdict.id
    assert f"of the published {published:g} samples/s on {generation}" in verdict.message


def test_other_runs_of_the_model_get_no_reference_verdict() -> None:
    rows = counterparts(sources.load("optimum-habana"))
    assert check_run(run_on("gaudi2", record_config(REF.config, 8)), rows) == []  # eight cards: not the row
    rank16 = dataclasses.replace(REF.config, lora=dataclasses.replace(REF.config.lora, rank=16))
    assert check_run(run_on("gaudi2", record_config(rank16, 1)), rows) == []
    assert check_run(run_on("gaudi", record_config(REF.config, 1)), rows) == []  # gaudi1's row ran batch 2


def test_a_job_of_other_width_is_skipped_with_the_command_that_compares() -> None:
    assert REF.world_problem(1) is None
    assert "--genai-nproc 1" in REF.world_problem(8)
    assert all(r.config.scale == "full" for r in REFERENCE_CONFIGS)
