import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals import metrics

lls = st.lists(st.floats(-500.0, -0.001), min_size=1, max_size=8)


def test_token_perplexity_hand_example():
    # four tokens each with probability 1/2 -> perplexity 2
    assert metrics.token_perplexity(4 * math.log(0.5), 4) == pytest.approx(2.0)


def test_word_byte_perplexity_and_bits_per_byte_hand_example():
    # two documents: ll -10 over 5 words / 20 bytes and ll -30 over 15 words / 60 bytes
    assert metrics.word_perplexity([-10.0, -30.0], [5, 15]) == pytest.approx(math.exp(40 / 20))
    assert metrics.byte_perplexity([-10.0, -30.0], [20, 60]) == pytest.approx(math.exp(40 / 80))
    assert metrics.bits_per_byte([-10.0, -30.0], [20, 60]) == pytest.approx(40 / 80 / math.log(2))


@settings(max_examples=25, deadline=None)
@given(values=lls, data=st.data())
def test_bits_per_byte_is_log2_of_byte_perplexity(values, data):
    n_bytes = data.draw(st.lists(st.integers(1, 10_000), min_size=len(values), max_size=len(values)))
    assert metrics.bits_per_byte(values, n_bytes) == pytest.approx(math.log2(metrics.byte_perplexity(values, n_bytes)))


@settings(max_examples=25, deadline=None)
@given(values=lls, data=st.data())
def test_word_perplexity_depends_only_on_totals(values, data):
    words = data.draw(st.lists(st.integers(1, 1000), min_size=len(values), max_size=len(values)))
    merged = metrics.word_perplexity([math.fsum(values)], [sum(words)])
    assert metrics.word_perplexity(values, words) == pytest.approx(merged, rel=1e-12)


def test_word_perplexity_matches_lm_eval_aggregation():
    lm_metrics = pytest.importorskip("lm_eval.api.metrics")
    pairs = [(-12.5, 4), (-3.25, 2), (-40.0, 11)]
    ours = metrics.word_perplexity([p[0] for p in pairs], [p[1] for p in pairs])
    assert ours == pytest.approx(lm_metrics.weighted_perplexity(pairs), rel=1e-12)
    assert metrics.bits_per_byte([p[0] for p in pairs], [p[1] for p in pairs]) == pytest.approx(
        lm_metrics.bits_per_byte(pairs), rel=1e-12)


def test_acc_and_acc_norm_hand_example():
    # raw log-likelihoods prefer the short choice; per character the long one wins
    lls_ = [-4.0, -6.0]
    choices = ["ab", "abcdefgh"]
    assert metrics.choice_correct(lls_, 0) == 1.0
    assert metrics.choice_correct_norm(lls_, choices, 0) == 0.0  # -2.0/char vs -0.75/char
    assert metrics.choice_correct_norm(lls_, choices, 1) == 1.0


def test_argmax_takes_the_first_on_ties_like_numpy():
    np = pytest.importorskip("numpy")
    values = [-1.0, -0.5, -0.5, -3.0]
    assert metrics.argmax(values) == int(np.argmax(values)) == 1


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(-100, 0), min_size=2, max_size=6))
def test_argmax_matches_numpy(values):
    np = pytest.importorskip("numpy")
    assert metrics.argmax(values) == int(np.argmax(values))


def test_mean_and_ratio():
    assert metrics.mean([1.0, 0.0, 1.0, 1.0]) == 0.75
    assert metrics.ratio(12.39, 12.02) == pytest.approx(1.0308, abs=1e-4)


def test_an_empty_choice_is_never_the_normalized_pick_and_the_question_counts():
    """lm-eval divides by the choice's length with numpy: an empty choice's -1.0 / 0 is -inf."""
    assert metrics.choice_correct_norm([-0.1, -2.0], ["", "bb"], 1) == 1.0
    assert metrics.choice_correct_norm([-0.1, -2.0], ["", "bb"], 0) == 0.0


@pytest.mark.parametrize("call, match", [
    (lambda: metrics.token_perplexity(-1.0, 0), "n_tokens"),
    (lambda: metrics.word_perplexity([-1.0], [1, 2]), "one per document"),
    (lambda: metrics.word_perplexity([-1.0], [0]), "positive"),
    (lambda: metrics.choice_correct_norm([-1.0], ["a", "b"], 0), "choices"),
    (lambda: metrics.mean([]), "at least one"),
    (lambda: metrics.ratio(1.0, 0.0), "zero"),
])
def test_bad_inputs_say_what_is_wrong(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_paired_drop_and_its_lower_bound_hand_example():
    base = [1.0] * 10 + [0.0] * 30
    one_flip = [0.0] + [1.0] * 9 + [0.0] * 30  # one answer lost out of 40
    assert metrics.paired_drop(base, one_flip) == pytest.approx(0.025)
    # differences: one 1 and 39 zeros -> s = sqrt((1 - 40 * 0.025**2) / 39) = 0.158
    s = math.sqrt((1 - 40 * 0.025 ** 2) / 39)
    assert metrics.paired_drop_lower_bound(base, one_flip) == pytest.approx(0.025 - 1.645 * s / math.sqrt(40))
    assert metrics.paired_drop_lower_bound(base, base) == 0.0


@settings(max_examples=25, deadline=None)
@given(pairs=st.lists(st.tuples(st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0])), min_size=2, max_size=60))
def test_lower_bound_never_exceeds_the_drop(pairs):
    base, other = [p[0] for p in pairs], [p[1] for p in pairs]
    drop = metrics.paired_drop(base, other)
    assert drop == pytest.approx(metrics.mean(base) - metrics.mean(other))
    assert metrics.paired_drop_lower_bound(base, other) <= drop + 1e-12


def test_acc_stderr_is_lm_evals_definition():
    outcomes = [1.0] * 30 + [0.0] * 10  # acc 0.75 over 40 examples
    assert metrics.mean_stderr(outcomes) == pytest.approx(math.sqrt(0.75 * 0.25 / 39))
    assert metrics.with_stderr("acc", outcomes) == {"acc": 0.75, "acc_stderr": pytest.approx(math.sqrt(0.75 * 0.25 / 39))}
    assert metrics.with_stderr("acc", [1.0]) == {"acc": 1.0}  # no standard error from one example
    with pytest.raises(ValueError, match="at least 2"):
        metrics.mean_stderr([1.0])


@settings(deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=200))
def test_acc_stderr_matches_lm_eval_and_the_binary_formula(outcomes):
    lm_eval_metrics = pytest.importorskip("lm_eval.api.metrics")
    p, n = sum(outcomes) / len(outcomes), len(outcomes)
    assert metrics.mean_stderr(outcomes) == pytest.approx(lm_eval_metrics.mean_stderr(outcomes), abs=1e-12)
    assert metrics.mean_stderr(outcomes) == pytest.approx(math.sqrt(p * (1 - p) / (n - 1)), abs=1e-12)
