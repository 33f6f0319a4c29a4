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
    assert t.for_metric("benchmark_median_s") == BUILTIN_DEFAULTS["benchmark_median_s"]
    assert t.for_metric("some_new_metric") == DEFAULT_MAX_REGRESSION
    assert parse_thresholds("  ").id == "defaults"


def test_the_registry_threshold_sits_below_the_users_keys_and_above_the_defaults() -> None:
    assert parse_thresholds(None).for_metric("ppl_ratio", "quant", registry=0.005) == pytest.approx(0.005)
    assert parse_thresholds("ppl_ratio=2%").for_metric("ppl_ratio", "quant", registry=0.005) == pytest.approx(0.02)
    assert parse_thresholds("*=3%").for_metric("ppl_ratio", "quant", registry=0.005) == pytest.approx(0.03)


# A quality metric: a deterministic score of the model's outputs or of its storage (fixed model, data and seed give the
# same number), told by its name; each needs its own threshold, a 4 % worse perplexity ratio must not pass on 5 %.
QUALITY_WORDS = ("perplexity", "ppl", "acc", "compression_ratio", "bits_per", "loss")
QUALITY_LIMITS = {"perplexity": 0.005, "ppl": 0.005, "acc": 0.01, "loss": 0.01, "compression_ratio": 0.001,
                  "bits_per_byte": 0.005, "bits_per_weight": 0.001}


def _quality_limit(name: str) -> float:
    for word in ("bits_per_byte", "bits_per_weight", "perplexity", "ppl", "compression_ratio", "acc", "loss"):
        if word in name:
            return QUALITY_LIMITS[word]
    raise AssertionError(name)


def test_every_quality_metric_of_the_registry_has_its_quality_threshold() -> None:
    """Walks every metrics_*.toml: each directed quality metric resolves, with no user threshold, to its quality
    threshold (perplexities 0.5 %, accuracies and losses 1 %, storage 0.1 %), from the registry, never the 5 % default."""
    from pytest_genai.claims import load_metrics
    from pytest_genai.results.registry import metric_info_from

    info = metric_info_from(load_metrics())
    quality = [m for m in info.values() if m.direction in ("higher", "lower") and not m.timing
               and any(w in m.name for w in QUALITY_WORDS)]
    assert {"perplexity", "ppl_ratio", "word_ppl_ratio", "rolling_token_perplexity", "lmeval_word_perplexity",
            "acc", "compression_ratio"} <= {m.name for m in quality}
    wrong = {m.name: m.max_regression for m in quality if m.max_regression != pytest.approx(_quality_limit(m.name))}
    assert wrong == {}
    t = parse_thresholds(None)
    for m in quality:
        assert t.for_metric(m.name, "quant", registry=m.max_regression) == pytest.approx(_quality_limit(m.name))


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


def test_rounds_are_precise_for_a_gate_when_their_median_interval_is_half_the_threshold_wide():
    from pytest_genai.report.thresholds import precise_for_gate

    tight = [1.0 + 0.004 * (i % 5 - 2) for i in range(20)]  # the median's interval: [0.996, 1.004]
    assert precise_for_gate(tight, 0.02)  # 0.8% wide, under half of 2%
    assert not precise_for_gate(tight, 0.015)  # over half of 1.5%
    assert not precise_for_gate([1.0], 0.5)  # one round: no interval at all
