"""The paper's architectures: parameter counts pinned to the published totals and to transformers' models."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.train.archs import GEMMA_2_27B, LLAMA_31_8B, LLAMA_33_70B, PAPER_ARCHS, ArchSpec, get_arch, scaled


@pytest.mark.parametrize("arch, params", [
    (LLAMA_31_8B, 8_030_261_248),   # "8B": 8.03 B parameters
    (GEMMA_2_27B, 27_227_128_320),  # "27B": 27.2 B parameters
    (LLAMA_33_70B, 70_553_706_496),  # "70B": 70.6 B parameters
])
def test_param_counts_match_published_totals(arch, params):
    assert arch.param_count() == params


@pytest.mark.parametrize("name", sorted(PAPER_ARCHS))
@pytest.mark.parametrize("scale", ["tiny", "small", "full"])
def test_param_count_matches_the_transformers_model(name, scale):
    from pytest_genai.train.build import build_model, supports_sdpa

    arch = get_arch(name, scale)
    model = build_model(arch, "sdpa" if supports_sdpa(arch) else "eager", device="meta")
    assert sum(p.numel() for p in model.parameters()) == arch.param_count()


@pytest.mark.parametrize("name", sorted(PAPER_ARCHS))
@pytest.mark.parametrize("scale", ["tiny", "small"])
def test_scaled_variants_keep_the_family_proportions(name, scale):
    full, small = PAPER_ARCHS[name], get_arch(name, scale)
    assert small.scale == scale and small.id == f"{name}@{scale}"
    assert small.family == full.family and small.tie_embeddings == full.tie_embeddings
    assert small.ffn / small.hidden == pytest.approx(full.ffn / full.hidden, rel=0.01)
    assert small.num_heads % small.num_kv_heads == 0
    assert small.num_heads // small.num_kv_heads <= full.num_heads // full.num_kv_heads
    assert small.param_count() < full.param_count()


def test_full_scale_is_the_arch_itself():
    assert scaled(LLAMA_31_8B, "full") is LLAMA_31_8B
    assert LLAMA_31_8B.id == "llama-3.1-8b"


@pytest.mark.parametrize("change, message", [
    ({"family": "gpt"}, "family"),
    ({"num_layers": 0}, "num_layers"),
    ({"num_kv_heads": 5}, "multiple of num_kv_heads"),
    ({"hidden": 1.5}, "hidden"),
])
def test_invalid_arch_names_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(LLAMA_31_8B, **change)


def test_unknown_model_and_scale_name_the_choices():
    with pytest.raises(ValueError, match="llama-3.1-8b"):
        get_arch("llama-2-7b")
    with pytest.raises(ValueError, match="--genai-scale"):
        get_arch("llama-3.1-8b", "huge")


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 3), head_dim=st.sampled_from([8, 16]), heads=st.sampled_from([2, 4]),
       gqa=st.sampled_from([1, 2]), ffn=st.integers(8, 96), vocab=st.integers(16, 300),
       family=st.sampled_from(["llama", "gemma2"]), tie=st.booleans())
def test_param_count_property_any_shape(layers, head_dim, heads, gqa, ffn, vocab, family, tie):
    """For any valid shape, the analytic count equals the parameters of the model transformers builds."""
    from pytest_genai.train.build import build_model

    arch = ArchSpec(name="x", family=family, num_layers=layers, hidden=heads * head_dim, num_heads=heads,
                    num_kv_heads=heads // gqa, head_dim=head_dim, ffn=ffn, vocab=vocab, tie_embeddings=tie,
                    max_positions=64)
    model = build_model(arch, "eager", device="meta")
    assert sum(p.numel() for p in model.parameters()) == arch.param_count()
