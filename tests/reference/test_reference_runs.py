"""Reference rows become runs the suite's own reader accepts, paired across generations by the published row."""
from __future__ import annotations

from pytest_genai.reference import sources
from pytest_genai.reference.runs import runs_by_generation

LORA = "CausalLanguageModelingLORAExampleTester::test_run_lora_clm_llama-7b_single_card"


def test_one_run_per_generation_with_reference_sources_and_provenance() -> None:
    runs = runs_by_generation(sources.load("optimum-habana"))
    assert sorted(runs) == ["gaudi", "gaudi2", "gaudi3"]
    rec = next(r for r in runs["gaudi2"].records if r.param == LORA)
    assert rec.metrics["samples_per_s"] == 18.428 and rec.sources["samples_per_s"] == "reference"
    assert rec.device.generation == "gaudi2" and rec.device.kind == "hpu"
    assert rec.environment["batch_per_card"] == 16  # how it ran: never matched on
    assert rec.labels["unstated"] == "seq_len"
    assert rec.attachments["provenance"]["line"] == 23
    assert not runs["gaudi2"].warnings


def test_a_published_row_pairs_across_generations_whatever_batch_each_used() -> None:
    runs = runs_by_generation(sources.load("optimum-habana"))
    g1 = next(r for r in runs["gaudi"].records if r.param == LORA)
    g2 = next(r for r in runs["gaudi2"].records if r.param == LORA)
    assert g1.environment["batch_per_card"] != g2.environment["batch_per_card"]
    assert g1.key == g2.key
