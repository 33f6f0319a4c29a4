"""--genai-scale has one parser (options.parse_scale); every experiment's table serves each value it accepts."""
import pytest

from pytest_genai.plugin.options import SCALES, parse_scale


def test_every_experiment_serves_every_scale_the_option_accepts():
    from pytest_genai.dabench.config import SCALES as level1
    from pytest_genai.dabench.level2.config import parallel_workload
    from pytest_genai.evals.config import PRESETS
    from pytest_genai.train.archs import SCALES as archs
    from pytest_genai.train.config import SCALE_SETTINGS

    for table in (level1, PRESETS, archs, SCALE_SETTINGS):
        assert set(table) == set(SCALES)
    for scale in SCALES:
        parallel_workload("cpu", scale)


@pytest.mark.parametrize("text, scale", [("tiny", "tiny"), (" Small ", "small"), ("FULL", "full")])
def test_scale_is_parsed_once_to_its_canonical_name(text, scale):
    assert parse_scale(text) == scale


@pytest.mark.parametrize("text", ["", "smal", "medium", "tiny,small"])
def test_an_unknown_scale_names_the_valid_ones(text):
    with pytest.raises(ValueError, match="use one of tiny, small, full"):
        parse_scale(text)
