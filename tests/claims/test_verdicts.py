"""Basis and noise-aware verdicts: only paper claims name a paper; timing claims are judged on an interval."""
import math

import pytest
from hypothesis import given, strategies as st

from pytest_genai.claims import INCONCLUSIVE, Interval, check_value, load_claims, load_metrics
from pytest_genai.claims.model import Claim
from pytest_genai.plugin.recorder import failing


def _claim(**kw) -> Claim:
    base = dict(id="T.r", paper="T", section="S", metric="m", unit="x", direction="higher", min=1.0,
                paper_text="DDP beats FSDP", basis="paper", timing=True)
    base.update(kw)
    return Claim(**base)


def _iv(lo: float, hi: float) -> Interval:
    return Interval(lo, hi, 0.95, 8, "test")


def test_every_packaged_claim_has_a_basis_and_only_paper_claims_name_the_paper() -> None:
    claims = load_claims()
    assert {c.basis for c in claims} == {"paper", "target", "physics"}
    for c in claims:
        message = check_value(c, c.min if c.min is not None else c.max).message
        if c.basis == "paper":
            assert f"Paper {c.paper}" in message
        else:
            assert "Paper" not in message and "not a paper claim" in message
            assert c.paper_value is None
    assert all(c.id.split(".")[1] != "target" or c.basis == "target" for c in claims)


def test_timing_metrics_are_declared_and_claims_inherit_them() -> None:
    metrics = load_metrics()
    assert metrics["quantize_time_ratio_vs_torchao"].timing and metrics["partition_max_stage_ratio"].timing
    assert not metrics["perplexity"].timing
    claims = {c.id: c for c in load_claims()}
    assert claims["B2.cpu_pipeline_optimal_partition"].timing and not claims["A1.ppl_ratio"].timing


def test_interval_verdicts_pass_fail_inconclusive() -> None:
    c = _claim()  # min 1.0
    assert check_value(c, 1.3, _iv(1.1, 1.5)).verdict == "pass"
    assert check_value(c, 0.8, _iv(0.7, 0.9)).verdict == "fail"
    v = check_value(c, 1.02, _iv(0.95, 1.1))
    assert v.verdict == INCONCLUSIVE and "straddles" in v.message and v.interval["lo"] == 0.95
    both = _claim(min=1.1, max=1.2)
    assert check_value(both, 1.3, _iv(1.25, 1.4)).verdict == "fail"
    assert check_value(both, 1.15, _iv(1.0, 1.3)).verdict == INCONCLUSIVE  # wider than the band


@pytest.mark.parametrize(("rounds", "expected"), [
    ([1.47, 1.50], INCONCLUSIVE), ([1.46, 1.48, 1.52], INCONCLUSIVE), ([1.2, 1.22, 1.21, 1.19], INCONCLUSIVE),
    ([1.47, 1.50, 1.49, 1.46, 1.48], "fail"), ([1.30, 1.32, 1.31, 1.29, 1.33], "pass"),
])
def test_too_few_rounds_decide_nothing(rounds, expected) -> None:
    """Up to 4 rounds the median's interval is [min, max] at 50-88% coverage: two rounds above a bound (even odds
    under noise) must not fail it, nor two inside it pass it. 5 rounds (94%) decide."""
    from pytest_genai.claims import median_interval

    c = _claim(min=1.25, max=1.45)
    v = check_value(c, sorted(rounds)[len(rounds) // 2], median_interval(rounds))
    assert v.verdict == expected
    if expected == INCONCLUSIVE:
        assert "too wide a net" in v.message and "5 rounds" in v.message
    straddling = check_value(c, 1.4, median_interval([1.4, 1.5]))
    assert straddling.verdict == INCONCLUSIVE and "straddles" in straddling.message


def test_a_timing_claim_with_one_value_is_inconclusive_and_a_value_claim_is_not() -> None:
    assert check_value(_claim(), 5.0).verdict == INCONCLUSIVE
    assert check_value(_claim(timing=False), 5.0).verdict == "pass"
    assert check_value(_claim(), math.nan, _iv(1, 2)).verdict == "fail"  # a non-finite value is never noise


@given(lo=st.floats(-10, 10), width=st.floats(0, 5), a=st.floats(-20, 20), w=st.floats(0, 10))
def test_interval_verdict_is_exactly_interval_arithmetic(lo, width, a, w) -> None:
    c = _claim(min=lo, max=lo + width)
    v = check_value(c, a + w / 2, _iv(a, a + w)).verdict
    inside = lo <= a and a + w <= lo + width
    outside = a + w < lo or a > lo + width
    assert v == ("pass" if inside else "fail" if outside else INCONCLUSIVE)


@pytest.mark.parametrize(("value", "interval", "bounds"), [
    (0.98, (1.02, 1.10), dict(min=1.0)),             # a mean ratio below the bound, its median's interval above it
    (1.05, (0.80, 0.95), dict(min=1.0)),             # the value within, the interval wholly below: no fail either
    (1.25, (1.10, 1.15), dict(min=1.0, max=1.2)),     # past the max, the interval inside the band
    (1.25, (0.90, 0.95), dict(min=1.0, max=1.2)),     # past the max, the interval past the min: two different sides
])
def test_a_value_and_its_interval_on_different_sides_of_a_bound_decide_nothing(value, interval, bounds) -> None:
    """The recorded value and its interval can come from different statistics (a mean ratio beside a median ratio's
    interval): when they disagree about a bound, a pass or a fail would contradict the value the report shows."""
    v = check_value(_claim(**bounds), value, _iv(*interval))
    assert v.verdict == INCONCLUSIVE and "disagree" in v.message and f"{value:.4g}" in v.message


@given(lo=st.floats(-10, 10), width=st.floats(0, 5), a=st.floats(-20, 20), w=st.floats(0, 10),
       x=st.floats(-30, 30))
def test_a_decided_interval_verdict_never_contradicts_the_value(lo, width, a, w, x) -> None:
    c = _claim(min=lo, max=lo + width)
    v = check_value(c, x, _iv(a, a + w)).verdict
    x_inside = lo <= x <= lo + width
    if v == "pass":
        assert x_inside and lo <= a and a + w <= lo + width
    if v == "fail":
        assert not x_inside and (a + w < lo or a > lo + width)


@pytest.mark.parametrize(
    ("verdict", "basis", "mode", "fails"),
    [
        ("fail", "paper", "enforce", True), ("fail", "physics", "enforce", True), ("fail", "target", "enforce", False),
        ("inconclusive", "paper", "enforce", False), ("inconclusive", "paper", "strict", True),
        ("inconclusive", "target", "strict", False), ("fail", "paper", "report", False), ("pass", "paper", "strict", False),
    ],
)
def test_which_verdicts_fail_a_test(verdict, basis, mode, fails) -> None:
    assert failing(verdict, basis, mode) is fails


@pytest.mark.parametrize(
    ("name", "source", "registered", "problem"),
    [
        ("tokens_per_s", "measured", None, None),
        ("peak_bytes_modeled", "modeled", None, None),
        ("ceiling_tflops_spec", "spec", "spec", None),
        ("memory_budget_bytes", "config", "config", None),
        ("ceiling_tflops_spec", "measured", None, "datasheet"),  # the reviewer's finding: a datasheet labelled measured
        ("peak_bytes_modeled", "measured", None, "says modeled"),
        ("bytes", "modeled", None, "must say so"),
        ("memory_budget_bytes", "measured", "config", "registry fixes"),
        ("peak", "spec", None, "must say so in its name"),
        ("x", "guessed", None, "must be one of"),
    ],
)
def test_source_rules(name, source, registered, problem) -> None:
    from pytest_genai.plugin.recorder import source_problem

    got = source_problem(name, source, registered)
    assert (got is None) if problem is None else (problem in got)


def test_registered_sources_are_fixed_in_the_packaged_metrics() -> None:
    metrics = load_metrics()
    assert metrics["memory_budget_bytes"].source == "config" and metrics["ceiling_gbs_spec"].source == "spec"
    assert metrics["world_size"].source == "config"


@pytest.mark.parametrize(("interval", "share", "expected"), [
    ((0.5, 0.7), None, "fail"),  # no PSI: as before
    ((0.5, 0.7), 0.03, "fail"),  # the suite's own ranks on idle cores
    ((0.5, 0.7), 0.2, "fail"),  # ZeRO-3's own threads, idle
    ((0.5, 0.7), 0.65, "inconclusive"),  # beside two CPU burners
    ((1.2, 1.4), 0.2, "pass"),
    ((1.2, 1.4), 0.65, "inconclusive"),  # a load that slows every round alike can favour either side of a ratio
    ((0.8, 1.2), 0.65, "inconclusive"),
])
def test_a_contended_machine_can_neither_pass_nor_fail_a_timing_claim(interval, share, expected) -> None:
    v = check_value(_claim(basis="physics"), sum(interval) / 2, _iv(*interval), stall_share=share)
    assert v.verdict == expected
    if share == 0.65 and interval[1] < 1:
        assert "waited for a CPU 65% of the measurement" in v.message and "< min 1" in v.message
    if share == 0.65 and interval[0] > 1:
        assert "waited for a CPU 65% of the measurement" in v.message and "within >= 1" in v.message


def test_contention_does_not_touch_deterministic_claims() -> None:
    assert check_value(_claim(timing=False), 0.5, stall_share=0.9).verdict == "fail"
    assert check_value(_claim(timing=False), 0.5, _iv(0.4, 0.6), stall_share=0.9).verdict == "fail"
