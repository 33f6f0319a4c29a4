"""Phase 2: the precision plan as data; monotone in sensitive_fraction; predicted ratio."""
import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import PlanConfig, PrecisionPlan, get_format, make_plan
from pytest_genai.quant.sensitivity import SensitivityResult


def fake_result(scores, shapes=None):
    shapes = shapes or {u: (64, 64) for u in scores}
    return SensitivityResult(definition="fraction_above_global_threshold", granularity="module", sparsity=0.3,
                             threshold=0.01, target_rank=1, threshold_rank=1, exact=True,
                             eligible_params=sum(r * c for r, c in shapes.values()), scores=dict(scores),
                             units={u: (u,) for u in scores}, module_shapes=shapes,
                             module_kinds={u: "linear" for u in scores}, excluded={}, other_bytes=1000,
                             other_fp32_bytes=1000)


def test_most_sensitive_quarter_gets_the_high_tier():
    res = fake_result({f"m{i}": i / 10 for i in range(8)})
    plan = make_plan(res, PlanConfig(tiers=("bf16", "int8"), sensitive_fraction=0.25))
    assert {m for m, f in plan.formats.items() if f == "bf16"} == {"m7", "m6"}
    s = plan.summary()
    assert s["params_per_format"] == {"bf16": 2 * 4096, "int8": 6 * 4096}
    expected_bytes = 2 * 4096 * 2 + 6 * (4096 + 64 * 4)
    assert s["predicted_stored_bytes"] == expected_bytes
    assert s["predicted_compression_ratio"] == pytest.approx(8 * 4096 * 4 / expected_bytes)
    assert s["mean_bits_per_weight"] == pytest.approx(8 * expected_bytes / (8 * 4096))
    assert s["predicted_compression_ratio_model"] == pytest.approx((8 * 4096 * 4 + 1000) / (expected_bytes + 1000))


def test_three_tiers_and_thresholds():
    res = fake_result({f"m{i}": float(i) for i in range(10)})
    plan = make_plan(res, PlanConfig(tiers=("fp16", "int8", "int4"), sensitive_fraction=(0.2, 0.5)))
    assert [plan.formats[f"m{i}"] for i in range(10)] == ["int4"] * 5 + ["int8"] * 3 + ["fp16"] * 2
    plan = make_plan(res, PlanConfig(tiers=("fp16", "int8", "int4"), score_threshold=(8.0, 3.0)))
    assert [plan.formats[f"m{i}"] for i in range(10)] == ["int4"] * 3 + ["int8"] * 5 + ["fp16"] * 2


@settings(max_examples=25, deadline=None)
@given(scores=st.lists(st.floats(0, 1), min_size=1, max_size=30), f1=st.floats(0, 1), f2=st.floats(0, 1),
       tiers=st.sampled_from([("bf16", "int8"), ("fp16", "int4"), ("fp32", "fp8_e4m3"), ("bf16", "fp8_e5m2")]))
def test_raising_sensitive_fraction_never_lowers_bits(scores, f1, f2, tiers):
    lo, hi = sorted((f1, f2))
    res = fake_result({f"m{i}": s for i, s in enumerate(scores)})
    p_lo = make_plan(res, PlanConfig(tiers=tiers, sensitive_fraction=lo))
    p_hi = make_plan(res, PlanConfig(tiers=tiers, sensitive_fraction=hi))
    for m in p_lo.formats:
        assert get_format(p_hi.formats[m]).bits >= get_format(p_lo.formats[m]).bits
    assert p_hi.summary()["predicted_compression_ratio"] <= p_lo.summary()["predicted_compression_ratio"]


@settings(max_examples=25, deadline=None)
@given(scores=st.dictionaries(st.text("abcdefgh.", min_size=1, max_size=8), st.floats(0, 10), min_size=1, max_size=12),
       frac=st.floats(0, 1), group=st.sampled_from([None, 32, 64]))
def test_plan_json_round_trip(scores, frac, group):
    plan = make_plan(fake_result(scores), PlanConfig(tiers=("fp16", "int4"), sensitive_fraction=frac, group_size=group))
    again = PrecisionPlan.from_json(plan.to_json())
    assert again == plan
    assert again.summary() == plan.summary()


def test_plan_errors_name_the_module():
    with pytest.raises(ValueError, match="empty"):
        PrecisionPlan(formats={}, shapes={})
    with pytest.raises(ValueError, match="module 'a' has a format but no shape"):
        PrecisionPlan(formats={"a": "int8"}, shapes={})
    with pytest.raises(ValueError, match="unknown weight format 'int2'"):
        PrecisionPlan(formats={"a": "int2"}, shapes={"a": (4, 4)})
    with pytest.raises(ValueError, match=r"module 'a'.*group_size=64 does not divide in_features=96"):
        PrecisionPlan(formats={"a": "int8"}, shapes={"a": (4, 96)}, group_size=64)
    with pytest.raises(ValueError, match="schema"):
        PrecisionPlan.from_dict({"formats": {}})


def test_unit_scores_and_ties_are_deterministic():
    res = fake_result({"b": 0.5, "a": 0.5, "c": 0.5, "d": 0.5})
    plan = make_plan(res, PlanConfig(sensitive_fraction=0.5))
    assert {m for m, f in plan.formats.items() if f == "bf16"} == {"a", "b"}
