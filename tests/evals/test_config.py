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
    ({"throughput_rounds": 0}, r"EvalSettings.throughput_rounds must be a positive integer"),
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


@pytest.mark.parametrize("scale", sorted(PRESETS))
def test_every_preset_times_enough_throughput_rounds_for_the_gate_to_decide(scale):
    # with too few rounds a side, the interval of a row's tokens/s is under the level that decides anything
    from pytest_genai.claims.check import MIN_LEVEL
    from pytest_genai.stats import median_interval

    rounds = PRESETS[scale][1].throughput_rounds
    assert median_interval([float(i) for i in range(rounds)]).level >= MIN_LEVEL
