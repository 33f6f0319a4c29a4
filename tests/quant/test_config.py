import dataclasses

import pytest

from pytest_genai.quant import PlanConfig, SensitivityConfig, default_tiers


def test_defaults_and_ids():
    assert SensitivityConfig().id == "sp0.3-module-frac"
    assert SensitivityConfig(granularity="block", definition="mean_abs_over_threshold", exact=False).id == \
        "sp0.3-block-meanabs-sampled"
    assert PlanConfig().id == "bf16-int8-frac0.25"
    assert PlanConfig(tiers=("fp16", "int8", "int4"), sensitive_fraction=(0.1, 0.5), group_size=64).id == \
        "fp16-int8-int4-frac0.1_0.5-g64"
    assert PlanConfig(score_threshold=0.7).id == "bf16-int8-thr0.7"


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SensitivityConfig().sparsity = 0.5


@pytest.mark.parametrize("kwargs, match", [
    ({"sparsity": 0.0}, r"SensitivityConfig.sparsity=0.0.*strictly between 0 and 1"),
    ({"sparsity": 1.0}, r"SensitivityConfig.sparsity=1.0"),
    ({"sparsity": True}, r"SensitivityConfig.sparsity=True"),
    ({"granularity": "layer"}, r"granularity='layer'.*\('module', 'block'\)"),
    ({"definition": "hessian"}, r"definition='hessian'.*fraction_above_global_threshold"),
    ({"sample_size": 3}, r"sample_size=3"),
])
def test_sensitivity_config_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SensitivityConfig(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"tiers": ("bf16", "int9")}, r"unknown format 'int9'"),
    ({"tiers": ("int8",)}, r"give 2 or 3 format names"),
    ({"tiers": ("int8", "bf16")}, r"must strictly decrease"),
    ({"tiers": ("int8", "fp8_e4m3")}, r"must strictly decrease"),
    ({"sensitive_fraction": 1.5}, r"sensitive_fraction=1.5"),
    ({"tiers": ("fp16", "int8", "int4"), "sensitive_fraction": 0.2}, r"give 2 number"),
    ({"tiers": ("fp16", "int8", "int4"), "sensitive_fraction": (0.5, 0.2)}, r"must not decrease"),
    ({"score_threshold": (0.1, 0.2)}, r"score_threshold=.*give 1 number"),
    ({"group_size": 0}, r"group_size=0"),
])
def test_plan_config_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PlanConfig(**kwargs)


def test_default_tiers_follow_the_paper():
    assert default_tiers("cuda") == ("fp16", "int8")
    assert default_tiers("hpu") == ("bf16", "fp8_e4m3")
    assert default_tiers("cpu") == ("bf16", "int8")

    class Dev:
        kind = "hpu"

    assert default_tiers(Dev()) == ("bf16", "fp8_e4m3")
    with pytest.raises(ValueError, match="no paper default for device kind 'ipu'"):
        default_tiers("ipu")
