"""Claims that misread the paper or could not fail, pinned after the audit against PAPERS.md and the seeds."""
from pytest_genai.claims import load_claims
from pytest_genai.dabench.config import default_sweep

CLAIMS = {c.id: c for c in load_claims()}


def _applies(cid: str, kind: str, generation: str, model: str | None, experiment: str, config: dict) -> bool:
    return CLAIMS[cid].applies_to(device_kind=kind, generation=generation, model=model, experiment=experiment,
                                  config=config)[0]


def test_wse2_allocation_applies_to_the_papers_decoder_block_sweep_only() -> None:
    for cfg in default_sweep("wse", "full"):
        assert _applies("B1.wse2_allocation", "wse", "wse-2", "gpt-decoder-block", "dabench", cfg.as_dict())
    other = {**default_sweep("wse", "tiny")[0].as_dict(), "mode": "forward", "batch": 1}
    assert not _applies("B1.wse2_allocation", "wse", "wse-2", "gpt-decoder-block", "dabench", other)


def test_gaudi2_fake_throughput_is_held_to_the_papers_maximum_only_at_the_largest_batch() -> None:
    base = {"mode": "fake", "task": "wikitext"}
    assert _applies("A1.gaudi2_fake_tokens_per_s", "hpu", "gaudi2", "tinyllama-1.1b", "quant",
                    {**base, "throughput_batch": "8x2048"})
    assert not _applies("A1.gaudi2_fake_tokens_per_s", "hpu", "gaudi2", "tinyllama-1.1b", "quant",
                        {**base, "throughput_batch": "1x256"})


def test_the_rdu_bound_and_the_ipu_efficiency_name_their_sources() -> None:
    assert CLAIMS["B1.rdu_memory_bound"].metric == "compute_bound_modeled"
    assert "not the paper's" in CLAIMS["B1.rdu_memory_bound"].note or "Not circular" in CLAIMS["B1.rdu_memory_bound"].note
    assert CLAIMS["B1.ipu_compute_efficiency"].metric == "compute_efficiency_spec"
    assert CLAIMS["B1.large_hidden_compute_bound"].metric == "compute_bound_modeled"


def test_no_target_or_physics_claim_quotes_the_paper_as_its_source() -> None:
    ddp = CLAIMS["A3.cuda_ddp_scaling_efficiency"]
    assert ddp.basis == "target" and "almost perfectly" not in ddp.paper_text
    assert CLAIMS["A1.compression_ratio"].note  # what the paper's ratio refers to, with the evidence
