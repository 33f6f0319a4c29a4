"""Threshold text: parsing, resolution order, and errors that name the bad token."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.report.thresholds import (
    BUILTIN_DEFAULTS,
    DEFAULT_MAX_REGRESSION,
    ThresholdError,
    Thresholds,
    parse_thresholds,
)


def test_issue_example_parses() -> None:
    t = parse_thresholds("tokens_per_s=5%,perplexity=0.5%")
    assert t.for_metric("tokens_per_s") == pytest.approx(0.05)
    assert t.for_metric("perplexity", "quant") == pytest.approx(0.005)


def test_resolution_most_specific_first() -> None:
    t = parse_thresholds("quant:acc=2%, acc=3%, finetune:*=7%, *=10%")
    assert t.for_metric("acc", "quant") == pytest.approx(0.02)  # experiment:metric
    assert t.for_metric("acc", "finetune") == pytest.approx(0.03)  # metric beats experiment:*
    assert t.for_metric("tokens_per_s", "finetune") == pytest.approx(0.07)  # experiment:*
    assert t.for_metric("tokens_per_s", "quant") == pytest.approx(0.10)  # user default beats built-ins
    assert t.for_metric("perplexity", "quant") == pytest.approx(0.10)


def test_builtin_defaults_apply_when_nothing_given() -> None:
    t = parse_thresholds(None)
    assert t.for_metric("perplexity") == BUILTIN_DEFAULTS["perplexity"]
    assert t.for_metric("some_new_metric") == DEFAULT_MAX_REGRESSION
    assert parse_thresholds("  ").id == "defaults"


@pytest.mark.parametrize(
    ("text", "token", "hint"),
    [
        ("tokens_per_s=5", "tokens_per_s=5", "tokens_per_s=5%"),
        ("tokens_per_s=5%,perplexity", "perplexity", "KEY=N%"),
        ("tokens_per_s=fast", "tokens_per_s=fast", "percentages"),
        ("tokens/s=5%", "tokens/s=5%", "not a metric name"),
        ("a=1%,,b=2%", "empty token", "single commas"),
        ("a=1%,a=2%", "a=2%", "given twice"),
        ("a=-1%", "a=-1%", "percentages"),
        ("x:y:z=1%", "x:y:z=1%", "not a metric name"),
    ],
)
def test_bad_tokens_are_named(text: str, token: str, hint: str) -> None:
    with pytest.raises(ThresholdError) as err:
        parse_thresholds(text, option="--max-regression")
    message = str(err.value)
    assert message.startswith("--max-regression:") and token in message and hint in message


def test_dataclass_validates_values() -> None:
    with pytest.raises(ThresholdError, match="'acc'"):
        Thresholds(per_metric={"acc": float("nan")})


names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
pcts = st.integers(0, 10_000).map(lambda n: n / 100)


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(names, pcts, max_size=4), st.dictionaries(st.tuples(names, names), pcts, max_size=3),
       st.none() | pcts)
def test_id_round_trips(per_metric, per_exp, default) -> None:
    t = Thresholds(per_metric={k: v / 100 for k, v in per_metric.items()},
                   per_experiment={k: v / 100 for k, v in per_exp.items()},
                   default=None if default is None else default / 100)
    again = parse_thresholds(None if t.id == "defaults" else t.id)
    for m in list(per_metric) + ["other"]:
        for e in [None] + [e for e, _ in per_exp]:
            assert again.for_metric(m, e) == pytest.approx(t.for_metric(m, e), rel=1e-12, abs=1e-15)
