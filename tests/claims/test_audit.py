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


def test_ddp_against_sharded_needs_two_ranks_and_says_why() -> None:
    """At world size 1 FSDP / ZeRO-3 shard and communicate nothing: DDP against them is no evidence either way."""
    for cid, sharded in (("A2.ddp_vs_fsdp", "fsdp"), ("A2.ddp_vs_zero3", "zero3")):
        config = {"sharded": sharded, "fits": True, "world_size": 1}
        ok, why = CLAIMS[cid].applies_to(device_kind="cuda", generation="h200", model=None, experiment="finetune",
                                         config=config)
        assert not ok and why == "config world_size=1, claim needs world_size >= 2"
        assert "not_applicable at one rank" in CLAIMS[cid].note
        assert _applies(cid, "cuda", "h200", None, "finetune", {**config, "world_size": 2})


def test_every_multi_rank_claim_is_scoped_to_two_ranks_or_more() -> None:
    multi = ("A2.ddp_vs_fsdp", "A2.ddp_vs_zero3", "A3.cuda_ddp_scaling_efficiency", "A3.cpu_ddp_weak_scaling",
             "B2.cpu_pipeline_optimal_partition", "B2.cpu_dp_weak_scaling", "B2.cpu_tp_communication_bound")
    for cid in multi:
        assert CLAIMS[cid].where.get("world_size") == {"min": 2}, cid
        assert "world_size >= 2" in CLAIMS[cid].note, cid


def test_bounds_from_percent_figures_are_judged_at_the_papers_precision() -> None:
    """DECISIONS.md, "A paper's precision": a figure stated to k decimals is met by a value that rounds to it."""
    assert (CLAIMS["B1.wse2_load_imbalance"].min, CLAIMS["B1.wse2_load_imbalance"].paper_text) == (
        0.955, "WSE-2 LI ~0.96-1.0")
    assert (CLAIMS["B1.wse2_allocation"].min, CLAIMS["B1.wse2_allocation"].max) == (0.915, 0.935)
    assert (CLAIMS["A2.flash_attention_gaudi"].min, CLAIMS["A2.flash_attention_gaudi"].max) == (1.095, 1.205)
    assert CLAIMS["B1.rdu_allocation"].max == 0.605 and CLAIMS["B1.ipu_compute_efficiency"].max == 0.415
    for cid in ("B1.wse2_load_imbalance", "B1.wse2_allocation", "A2.flash_attention_gaudi", "B1.rdu_allocation",
                "B1.ipu_compute_efficiency"):
        assert "precision" in CLAIMS[cid].note, cid
