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
    assert "include_lm_head=True has no effect" in excluded["lm_head.weight"]  # the request is not silently lost


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


def test_replaced_weight_values_live_in_a_tensor_of_their_own_seen_by_every_tied_use():
    """Fake mode and prune_ swap new tensors in (a freshly loaded model's weights are copy-on-write file mappings,
    slow to write in place): the parameter object stays, so a tied use sees the new values; the old storage is not
    written."""
    import torch

    from pytest_genai.quant.eligibility import replace_weight_values

    emb = nn.Embedding(5, 3)
    head = nn.Linear(3, 5, bias=False)
    head.weight = emb.weight  # tied, as transformers ties them: one parameter object
    old = emb.weight.detach().clone()
    old_storage = emb.weight.data
    new = torch.arange(15, dtype=torch.float64).reshape(5, 3)
    replace_weight_values(head.weight, new)
    assert head.weight is emb.weight and emb.weight.dtype == torch.float32
    assert torch.equal(emb.weight.detach(), new.float()) and torch.equal(old_storage, old)
    with pytest.raises(ValueError, match=r"shape \(3, 5\) for a weight of shape \(5, 3\)"):
        replace_weight_values(emb.weight, torch.zeros(3, 5))


def test_fake_mode_and_prune_give_each_weight_a_tensor_of_its_own(llama):
    import torch

    from pytest_genai.quant import PlanConfig, SensitivityConfig, analyze_sensitivity, make_plan, prune_, quantize_model

    res = analyze_sensitivity(llama, SensitivityConfig())
    first = next(iter(res.module_shapes))
    weight = llama.get_submodule(first).weight
    before, ptr = weight.detach().clone(), weight.data_ptr()
    prune_(llama, res)
    assert weight.data_ptr() != ptr and torch.equal(weight.detach(), before.masked_fill(before.abs() <= res.threshold, 0))
    ptr = weight.data_ptr()
    quantize_model(llama, make_plan(res, PlanConfig()), mode="fake")
    assert llama.get_submodule(first).weight is weight and weight.data_ptr() != ptr


def test_a_linear_or_embedding_with_a_forward_of_its_own_is_not_eligible():
    """Real mode replaced nn.Linear / nn.Embedding subclasses by plain quantized modules and dropped their forward:
    Gemma's scaled word embeddings lost ``* embed_scale`` (logits 0.46 off fake mode's), MoE routers their tuples.
    They are excluded with the reason, and a weight tied to one is excluded with it."""
    import torch

    class ScaledEmbedding(nn.Embedding):
        def forward(self, ids):
            return super().forward(ids) * 8.0

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = ScaledEmbedding(32, 16)
            self.proj = nn.Linear(16, 16)
            self.head = nn.Linear(16, 32, bias=False)
            self.head.weight = self.embed.weight  # tied

        def forward(self, ids):
            return self.head(self.proj(self.embed(ids)))

        def get_output_embeddings(self):
            return self.head

    model = Model()
    eligible, excluded = collect_eligible(model, include_embeddings=True, include_lm_head=True)
    assert [e.name for e in eligible] == ["proj"]
    assert excluded["embed.weight"].startswith("ScaledEmbedding overrides Embedding.forward")
    assert excluded["head.weight"].startswith("tied to embed.weight, which is excluded")

    from pytest_genai.quant import quantize_model
    from pytest_genai.quant.plan import uniform_plan
    from pytest_genai.quant.sensitivity import SensitivityConfig, analyze_sensitivity

    import copy

    ids = torch.arange(8).view(1, 8)
    plan = uniform_plan(analyze_sensitivity(model, SensitivityConfig(include_embeddings=True, include_lm_head=True)),
                        "int8")
    assert set(plan.formats) == {"proj"}
    fake = quantize_model(copy.deepcopy(model), plan, "fake")
    quantize_model(model, plan, "real")
    with torch.no_grad():
        assert type(model.embed) is ScaledEmbedding and torch.allclose(model(ids), fake(ids), atol=1e-4, rtol=1e-5)
