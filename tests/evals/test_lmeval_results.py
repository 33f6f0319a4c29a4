"""What the lm-eval comparison records (pytest_genai.evals.lmeval_compare: wikitext_result, choice_result and their
helpers; pure, no lm-eval needed): every metric name and its source pinned, acc_stderr as lm-eval defines it, every
metric registered with a source the recorder accepts."""
import math

import pytest

from pytest_genai.evals.lmeval_compare import (LmEvalWikitext, choice_outcomes, choice_result, lmeval_input_tokens,
                                               relative_difference, wikitext_result)
from pytest_genai.evals.tasks import ChoiceResult, RollingResult
from pytest_genai.evals.throughput import OpProfile
from pytest_genai.evals.windows import Window
from pytest_genai.results.measurement import Measurement
from pytest_genai.plugin.recorder import result_problems

WIKITEXT = {"word_perplexity": "measured", "lmeval_word_perplexity": "measured", "word_ppl_rel_diff": "measured",
            "bits_per_byte": "measured", "eval_input_tokens": "measured", "tokens_per_s": "measured",
            "lmeval_tokens_per_s": "measured", "speedup_vs_lmeval": "measured", "matmul_time_share": "measured",
            "matmul_tflops": "measured", "matmul_fraction_of_peak": "measured",
            "modeled_speedup_ceiling_vs_lmeval": "modeled"}
BOOLQ = {"acc": "measured", "acc_stderr": "measured", "lmeval_acc": "measured", "eval_input_tokens": "measured",
         "lmeval_input_tokens": "measured", "tokens_per_s": "measured", "lmeval_tokens_per_s": "measured",
         "speedup_vs_lmeval": "measured"}
HELLASWAG = {**BOOLQ, "acc_norm": "measured", "acc_norm_stderr": "measured", "lmeval_acc_norm": "measured"}


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


def assert_recordable(result):
    """Each metric is a Measurement with an explicit source the recorder accepts, and registered (so its unit is)."""
    assert not result_problems(result)


def rolling(word_perplexity=20.0, input_tokens=1000):
    return RollingResult(word_perplexity=word_perplexity, byte_perplexity=2.0, bits_per_byte=1.0, token_perplexity=30.0,
                         loglikelihoods=(-10.0,), words=(5,), n_bytes=(20,), scored_tokens=900,
                         input_tokens=input_tokens)


PROFILE = OpProfile({"aten::mm": 600_000.0, "aten::softmax": 400_000.0}, matmul_flops=3 * 10**12)  # 0.6 s of 1 s


def test_wikitext_result_pins_every_metric_and_source():
    theirs = LmEvalWikitext(word_perplexity=20.01, byte_perplexity=2.0, bits_per_byte=1.0, loglikelihoods=(-10.0,))
    result = wikitext_result(rolling(), theirs, ours_s=2.0, theirs_s=5.0, profile=PROFILE, peak_tflops=10.0,
                             data_note="embedded slice")
    assert sources(result) == WIKITEXT and result.labels == {"data": "embedded slice"}
    assert_recordable(result)
    m = {name: x.value for name, x in result.metrics.items()}
    assert m["word_ppl_rel_diff"] == pytest.approx(0.01 / 20.01)
    assert m["tokens_per_s"] == 500.0 and m["lmeval_tokens_per_s"] == 200.0 and m["speedup_vs_lmeval"] == 2.5
    assert m["matmul_time_share"] == pytest.approx(0.6) and m["matmul_tflops"] == pytest.approx(5.0)
    assert m["matmul_fraction_of_peak"] == pytest.approx(0.5)
    assert m["modeled_speedup_ceiling_vs_lmeval"] == pytest.approx(2.5 / 0.6)
    # no datasheet peak: no fraction of it, everything else as before
    bare = wikitext_result(rolling(), theirs, ours_s=2.0, theirs_s=5.0, profile=PROFILE, peak_tflops=None)
    assert set(bare.metrics) == set(WIKITEXT) - {"matmul_fraction_of_peak"}


def test_relative_difference():
    assert relative_difference(10.1, 10.0) == pytest.approx(0.01) and relative_difference(9.9, 10.0) == pytest.approx(0.01)


def choice(correct, correct_norm=None, input_tokens=300):
    return ChoiceResult(acc=sum(correct) / len(correct),
                        acc_norm=None if correct_norm is None else sum(correct_norm) / len(correct_norm),
                        correct=tuple(correct), correct_norm=None if correct_norm is None else tuple(correct_norm),
                        n=len(correct), input_tokens=input_tokens)


def test_boolq_result_records_acc_with_lm_evals_stderr():
    ours = choice([1.0, 0.0, 1.0, 1.0])
    result = choice_result(ours, [1.0, 0.0, 1.0, 1.0], None, their_tokens=600, our_s=[1.0, 2.0, 1.5],
                           their_s=[3.0, 4.0, 6.0], data_note="GENAI_DATA_DIR")
    assert sources(result) == BOOLQ and result.labels == {"data": "GENAI_DATA_DIR"}
    assert_recordable(result)
    m = result.metrics
    # lm-eval's acc_stderr: sample standard deviation over sqrt(n) = sqrt(p(1-p)/(n-1))
    assert m["acc"].value == 0.75 and m["acc_stderr"].value == pytest.approx(math.sqrt(0.75 * 0.25 / 3))
    assert m["lmeval_acc"].value == 0.75
    assert m["tokens_per_s"].value == 200.0 and m["lmeval_tokens_per_s"].value == 150.0  # over median seconds
    assert m["speedup_vs_lmeval"].rounds == (3.0, 2.0, 4.0)  # per interleaved round
    assert m["speedup_vs_lmeval"].value == 3.0
    # each side's tokens/s per round, for the gate's intervals (ours: 300 tokens; lm-eval's: 600)
    assert m["tokens_per_s"].rounds == (300.0, 150.0, 200.0) and m["lmeval_tokens_per_s"].rounds == (200.0, 150.0, 100.0)


def test_hellaswag_result_adds_acc_norm_and_its_stderr():
    ours = choice([1.0, 0.0], [1.0, 1.0])
    result = choice_result(ours, [1.0, 0.0], [1.0, 1.0], their_tokens=10, our_s=[1.0], their_s=[2.0])
    assert sources(result) == HELLASWAG
    assert_recordable(result)
    assert result.metrics["acc_norm_stderr"].value == 0.0 and result.metrics["acc_stderr"].value == pytest.approx(0.5)
    assert result.metrics["tokens_per_s"].rounds is None  # one round: nothing to judge an interval on


def test_one_example_has_no_stderr():
    result = choice_result(choice([1.0], [0.0]), [1.0], [0.0], their_tokens=10, our_s=[1.0], their_s=[2.0])
    assert set(result.metrics) == set(HELLASWAG) - {"acc_stderr", "acc_norm_stderr"}


def test_choice_outcomes_from_lm_evals_loglikelihoods():
    choices = [("a", "bbbb"), ("yes", "no")]
    lls = [-1.0, -2.0, -5.0, -1.0]  # example 1: "a" wins raw, "bbbb" per character; example 2: "no"
    assert choice_outcomes(lls, choices, [1, 1], normalize=True) == ([0.0, 1.0], [1.0, 1.0])
    assert choice_outcomes(lls, choices, [0, 0], normalize=False) == ([1.0, 0.0], None)
    with pytest.raises(ValueError, match="5 log-likelihoods for 4 choices"):
        choice_outcomes(lls + [0.0], choices, [0, 0], normalize=False)


class _LM:
    """encode_pair as characters: one token per character, context first."""

    def encode_pair(self, context, continuation):
        return Window(tuple(map(ord, context)), tuple(map(ord, continuation)))


def test_lmeval_input_tokens_counts_each_distinct_model_input_once():
    # single-token choices of one context share their model input (context + continuation[:-1])
    pairs = [("ab", "x"), ("ab", "y"), ("ab", "zz")]
    assert lmeval_input_tokens(_LM(), pairs, max_length=100) == 2 + 3
    assert lmeval_input_tokens(_LM(), pairs, max_length=2) == 2 + 2  # left-truncated to max_length

