import dataclasses

import pytest

from pytest_genai.evals.config import PRESETS, EvalBudget, EvalSettings, preset


@pytest.mark.parametrize("kwargs, match", [
    ({"hellaswag": 0}, r"EvalBudget.hellaswag must be a positive integer or None"),
    ({"wikitext_tokens": -5}, r"EvalBudget.wikitext_tokens"),
    ({"boolq": 2.5}, r"EvalBudget.boolq"),
    ({"seed": "x"}, r"EvalBudget.seed must be an integer"),
])
def test_budget_validation_names_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EvalBudget(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"batch_size": 0}, r"EvalSettings.batch_size must be a positive integer"),
    ({"context": 512, "stride": 1024, "max_length": 2048}, r"stride \(1024\) must not exceed context \(512\)"),
    ({"context": 4096, "max_length": 2048}, r"context \(4096\) must not exceed max_length"),
    ({"threads": 0}, r"EvalSettings.threads"),
])
def test_settings_validation_names_the_field_and_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EvalSettings(**kwargs)


def test_ids_are_stable_and_distinct():
    assert EvalBudget(hellaswag=40).id == "wtpall-wttall-hs40-bqall-s1234"
    assert EvalSettings().id == "L2048-c2048-s512-b8"
    assert len({b.id for b, _ in PRESETS.values()}) == len(PRESETS)


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        EvalSettings().stride = 3


def test_preset_and_limit_override():
    budget, settings = preset(None)
    assert (budget, settings) == PRESETS["tiny"]
    limited, _ = preset("tiny", limit=7)
    assert (limited.wikitext_pages, limited.hellaswag, limited.boolq) == (7, 7, 7)
    assert limited.wikitext_tokens == budget.wikitext_tokens
    assert preset("full")[0] == EvalBudget()
    with pytest.raises(ValueError, match="--genai-scale 'huge'.*tiny, small, full"):
        preset("huge")
