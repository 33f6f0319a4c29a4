import dataclasses

import pytest

from pytest_genai.dabench.config import SCALES, DecoderConfig, capacity_config, default_sweep


def test_id_is_readable_and_names_every_axis():
    cfg = DecoderConfig(layers=4, hidden=512, heads=8, seq_len=256, batch=2, dtype="bf16", mode="train")
    assert cfg.id == "L4-h512-a8-s256-b2-bf16-train"
    assert dataclasses.replace(cfg, attention="sdpa", causal=False, ffn_ratio=2).id == "L4-h512-a8-f2-s256-b2-bf16-train-sdpa-bidir"


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("layers", 0, "DecoderConfig.layers"),
        ("hidden", 65, "divisible by heads"),
        ("heads", True, "DecoderConfig.heads"),
        ("dtype", "fp8", "DecoderConfig.dtype"),
        ("mode", "eval", "DecoderConfig.mode"),
        ("attention", "flash", "DecoderConfig.attention"),
    ],
)
def test_invalid_fields_are_named(field, value, needle):
    kwargs = {"hidden": 64, "heads": 2, field: value}
    with pytest.raises(ValueError, match=needle):
        DecoderConfig(**kwargs)


def test_params_count_matches_the_block():
    cfg = DecoderConfig(layers=3, hidden=8, heads=2, ffn_ratio=4)
    h, f = 8, 32
    per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)
    assert cfg.params == 3 * per_layer


@pytest.mark.parametrize("kind", ["cpu", "cuda", "hpu", "wse", "rdu", "ipu"])
@pytest.mark.parametrize("scale", SCALES)
def test_sweeps_have_unique_ids(kind, scale):
    configs = default_sweep(kind, scale)
    assert configs
    assert len({c.id for c in configs}) == len(configs)


def test_sweep_errors_name_the_choices():
    with pytest.raises(ValueError, match="tiny"):
        default_sweep("cpu", "huge")
    with pytest.raises(ValueError, match="device kind 'tpu'"):
        default_sweep("tpu")
    with pytest.raises(ValueError, match="capacity config"):
        capacity_config("wse")


def test_tiny_cpu_sweep_spans_layers_hidden_and_modes():
    configs = default_sweep("cpu", "tiny")
    assert {c.layers for c in configs} >= {2, 4}
    assert len({c.hidden for c in configs}) >= 2
    assert {c.mode for c in configs} == {"forward", "train"}
