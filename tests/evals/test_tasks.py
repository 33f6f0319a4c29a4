import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals import tasks
from pytest_genai.evals.data import BoolQItem, HellaSwagItem
from pytest_genai.evals.lm import EvalLM
from pytest_genai.evals.windows import Window

from .conftest import byte_tokenizer
from .test_scoring import reference_logprob

TEXT = (" = Title = \n The first line , with @-@ tokens . \n = = Part = = \n Second line ( here ) is longer "
        "than the first one . \n")
PAGES = [TEXT, " = Other = \n Short page . \n", " = Third = \n" + " words and more words ." * 6 + " \n"]
HS = [HellaSwagItem(0, "Cooking: A man cuts onions. he", ("fries them.", "sings a song loudly.", "x", "cries."), 0),
      HellaSwagItem(1, "Sport: She runs fast. she", ("wins.", "loses the race badly.", "sits.", "jumps high."), 3)]
BQ = [BoolQItem(0, "Sky -- The sky is blue.", "is the sky blue", 1), BoolQItem(1, "Sea -- Water.", "is it dry", 0)]


@pytest.fixture
def lm(model, tokenizer):
    return EvalLM(model, tokenizer, max_length=32, batch_size=4)


# -- tokenization rules ----------------------------------------------------------------------------------------------
def test_prefix_token_is_bos_else_eos(model, tokenizer):
    assert EvalLM(model, tokenizer).prefix_token_id == tokenizer.bos_token_id


def test_encode_pair_moves_trailing_spaces_to_the_continuation(lm):
    pair = lm.encode_pair("Answer: ", "yes")
    assert pair == Window(tuple(lm.encode("Answer:")), tuple(lm.encode(" yes")))


def test_encode_pair_with_empty_context_conditions_on_the_prefix_token(lm):
    pair = lm.encode_pair("", "abc")
    assert pair.context == (lm.prefix_token_id,) and pair.continuation == tuple(lm.encode("abc"))


def test_an_empty_context_takes_the_continuation_without_special_tokens(model):
    """lm-eval's ``loglikelihood`` for an empty context: a tokenizer that appends EOS (or prepends BOS) scores the
    continuation's own tokens after the prefix token, never an added EOS or a second BOS."""
    from tokenizers import processors

    tok = byte_tokenizer(add_bos=True)
    bos, eos = tok.bos_token_id, tok.eos_token_id
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", bos), ("</s>", eos)])
    assert tok.encode("ab")[-1] == eos  # the tokenizer's own rule appends EOS
    lm = EvalLM(model, tok)
    pair = lm.encode_pair("", "ab")
    assert pair.context == (bos,) and pair.continuation == tuple(tok.encode("ab", add_special_tokens=False))
    assert eos not in pair.continuation


def test_a_bos_adding_tokenizer_is_not_given_a_second_bos(model):
    tok = byte_tokenizer(add_bos=True)
    lm = EvalLM(model, tok)
    assert lm.encode("ab")[0] == tok.bos_token_id
    assert lm.encode("<s>ab").count(tok.bos_token_id) == 1  # text already starting with BOS: nothing added


# -- perplexity -------------------------------------------------------------------------------------------------------
def test_sliding_perplexity_stride_equal_context_is_the_non_overlapping_result(lm, model):
    tokens = lm.encode(TEXT)
    context = 16
    result = tasks.sliding_perplexity(lm, TEXT, context=context, stride=context)
    # independent computation: chunk k predicts tokens [16k, 16k+16) from the previous token (prefix for k = 0)
    total = 0.0
    for start in range(0, len(tokens), context):
        chunk = tokens[start: start + context]
        prev = [lm.prefix_token_id] if start == 0 else tokens[start - 1: start]
        if len(chunk) < context and start > 0:  # the last chunk is left-filled to the full context
            prev = tokens[max(0, start + len(chunk) - context - 1): start]
        total += reference_logprob(model, prev, chunk, context)
    assert result.scored_tokens == len(tokens)
    assert result.perplexity == pytest.approx(math.exp(-total / len(tokens)), rel=1e-5)


def test_sliding_perplexity_with_the_whole_text_in_one_window_is_exact(lm, model):
    tokens = lm.encode(PAGES[1])
    result = tasks.sliding_perplexity(lm, PAGES[1], context=len(tokens), stride=1)
    exact = reference_logprob(model, [lm.prefix_token_id], tokens, len(tokens))
    assert result.loglikelihood == pytest.approx(exact, abs=1e-4)


def test_more_overlap_never_changes_which_tokens_are_scored(lm):
    a = tasks.sliding_perplexity(lm, TEXT, context=16, stride=16)
    b = tasks.sliding_perplexity(lm, TEXT, context=16, stride=4)
    assert a.scored_tokens == b.scored_tokens and b.input_tokens > a.input_tokens


def test_sliding_context_above_max_length_is_an_error(lm):
    with pytest.raises(ValueError, match="max_length"):
        tasks.sliding_perplexity(lm, TEXT, context=64, stride=64)


def test_wikitext_rolling_hand_check(lm, model):
    from pytest_genai.evals.text import count_bytes, count_words, detokenize_wikitext

    result = tasks.wikitext_rolling(lm, PAGES[:2])
    lls = []
    for page in PAGES[:2]:
        windows = tasks.rolling_windows_for(lm, detokenize_wikitext(page))
        lls.append(sum(reference_logprob(model, w.context, w.continuation, lm.max_length) for w in windows))
    assert list(result.loglikelihoods) == pytest.approx(lls, abs=1e-3)
    words = sum(count_words(p) for p in PAGES[:2])
    assert result.word_perplexity == pytest.approx(math.exp(-sum(lls) / words), rel=1e-5)
    assert result.bits_per_byte == pytest.approx(-sum(lls) / sum(count_bytes(p) for p in PAGES[:2]) / math.log(2), rel=1e-5)


# -- multiple choice --------------------------------------------------------------------------------------------------
def test_hellaswag_acc_and_acc_norm_by_hand(lm, model):
    result = tasks.hellaswag(lm, HS)
    expected, expected_norm = [], []
    for item in HS:
        lls = []
        for ending in item.endings:
            pair = lm.encode_pair(item.query, " " + ending)
            lls.append(reference_logprob(model, pair.context, pair.continuation, lm.max_length))
        expected.append(float(max(range(4), key=lambda k: lls[k]) == item.label))
        normed = [ll / len(e) for ll, e in zip(lls, item.endings)]
        expected_norm.append(float(max(range(4), key=lambda k: normed[k]) == item.label))
    assert list(result.correct) == expected and list(result.correct_norm) == expected_norm
    assert result.acc == sum(expected) / 2 and result.acc_norm == sum(expected_norm) / 2


def test_boolq_uses_lm_eval_prompt_and_choices(lm, model):
    assert tasks.boolq_prompt(BQ[0]) == "Sky -- The sky is blue.\nQuestion: is the sky blue?\nAnswer:"
    result = tasks.boolq(lm, BQ)
    for item, correct in zip(BQ, result.correct):
        lls = [reference_logprob(model, *dataclasses.astuple(lm.encode_pair(tasks.boolq_prompt(item), " " + c)), 32)
               for c in ("no", "yes")]
        assert correct == float((lls[1] > lls[0]) == bool(item.label))
    assert result.acc_norm is None


@settings(max_examples=6, deadline=None)
@given(batch_size=st.integers(1, 8))
def test_no_metric_depends_on_batch_size(model, tokenizer, batch_size):
    ref = EvalLM(model, tokenizer, max_length=32, batch_size=1)
    lm = EvalLM(model, tokenizer, max_length=32, batch_size=batch_size)
    assert tasks.sliding_perplexity(lm, TEXT, context=16, stride=8).perplexity == pytest.approx(
        tasks.sliding_perplexity(ref, TEXT, context=16, stride=8).perplexity, rel=1e-5)
    a, b = tasks.wikitext_rolling(lm, PAGES), tasks.wikitext_rolling(ref, PAGES)
    assert (a.word_perplexity, a.bits_per_byte) == pytest.approx((b.word_perplexity, b.bits_per_byte), rel=1e-5)
    assert tasks.hellaswag(lm, HS).correct_norm == tasks.hellaswag(ref, HS).correct_norm
    assert tasks.boolq(lm, BQ).correct == tasks.boolq(ref, BQ).correct


def test_mismatched_inputs_are_errors(lm):
    with pytest.raises(ValueError, match="one each"):
        tasks.multiple_choice(lm, ["a"], [["x"], ["y"]], [0], normalize=False)
    with pytest.raises(ValueError, match="no WikiText pages"):
        tasks.wikitext_rolling(lm, [])
