import pytest
import torch.nn as nn

from pytest_genai.quant.eligibility import block_of, collect_eligible


def test_llama_linear_weights_only_by_default(llama_factory):
    model = llama_factory(bias=True)
    eligible, excluded = collect_eligible(model)
    names = [e.name for e in eligible]
    assert len(names) == 2 * 7
    assert all(isinstance(model.get_submodule(n), nn.Linear) for n in names)
    assert "lm_head" not in names and "model.embed_tokens" not in names
    assert excluded["model.embed_tokens.weight"].startswith("embedding")
    assert excluded["lm_head.weight"].startswith("lm_head")
    assert excluded["model.layers.0.self_attn.q_proj.bias"] == "bias"
    assert excluded["model.norm.weight"] == "normalization"
    assert excluded["model.layers.1.input_layernorm.weight"] == "normalization"


def test_biases_and_norms_never_eligible_whatever_the_flags(llama_factory):
    model = llama_factory(bias=True)
    eligible, excluded = collect_eligible(model, include_embeddings=True, include_lm_head=True)
    weights = {e.name + ".weight" for e in eligible}
    for pname, p in model.named_parameters():
        if pname.endswith("bias") or "norm" in pname:
            assert pname not in weights and pname in excluded
    assert {"model.embed_tokens", "lm_head"} <= {e.name for e in eligible}
    kinds = {e.name: e.kind for e in eligible}
    assert kinds["lm_head"] == "lm_head" and kinds["model.embed_tokens"] == "embedding"


def test_tied_embeddings_counted_once_and_reported(llama_factory):
    model = llama_factory(tie=True)
    eligible, excluded = collect_eligible(model, include_embeddings=True, include_lm_head=True)
    assert [e.name for e in eligible].count("lm_head") == 0
    emb = next(e for e in eligible if e.name == "model.embed_tokens")
    assert emb.tied == ("lm_head",)
    assert "tied to model.embed_tokens.weight" in excluded["lm_head.weight"]
    _, excluded = collect_eligible(model, include_lm_head=True)  # embedding excluded -> its tied head too
    assert "which is excluded" in excluded["lm_head.weight"]


def test_block_units():
    assert block_of("model.layers.3.mlp.up_proj") == "model.layers.3"
    assert block_of("transformer.h.11.attn.c_attn") == "transformer.h.11"
    assert block_of("lm_head") is None


def test_block_granularity_groups_modules(llama):
    eligible, _ = collect_eligible(llama, granularity="block")
    assert {e.unit for e in eligible} == {"model.layers.0", "model.layers.1"}


def test_model_without_linear_layers_rejected():
    with pytest.raises(ValueError, match=r"Sequential: no eligible weight matrices"):
        collect_eligible(nn.Sequential(nn.LayerNorm(4)))
    with pytest.raises(ValueError, match="no eligible"):
        collect_eligible(nn.Sequential())
