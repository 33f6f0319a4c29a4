import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals.text import count_bytes, count_words, detokenize_wikitext

WIKI = " = Du Fu = \n Du Fu ( 712 – 770 ) was a 1 @,@ 500 @-@ year poet 's ; he \" wrote \" . \n = = Life = = \n"


def test_detokenizer_hand_example():
    assert detokenize_wikitext(WIKI) == (
        " = Du Fu =\nDu Fu (712 – 770) was a 1,500-year poet's; he \"wrote\".\n== Life ==\n")


def test_word_and_byte_counts_follow_lm_eval():
    # re.split on whitespace of the raw page: leading/trailing whitespace adds empty items, as in lm-eval
    assert count_words(" a b \n") == 4
    assert count_bytes("é") == 2


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["word", " ", "@-@", "@,@", "@.@", ",", ".", "(", ")", "\"", "'", "s", "=", "\n",
                                 ":", ";", "!", "?", "N", "°", "[", "]", "{", "}", "'s"]), max_size=40))
def test_detokenizer_equals_lm_eval(parts):
    pre = pytest.importorskip("lm_eval.tasks.wikitext.preprocess_wikitext")
    text = " ".join(parts)
    assert detokenize_wikitext(text) == pre.wikitext_detokenizer({"page": text})


def test_detokenizer_and_counts_equal_lm_eval_on_real_pages(shared_data_dir):
    pre = pytest.importorskip("lm_eval.tasks.wikitext.preprocess_wikitext")
    from pytest_genai.evals.data import load_wikitext

    for page in load_wikitext(shared_data_dir).pages[:10]:
        assert detokenize_wikitext(page.text) == pre.wikitext_detokenizer({"page": page.text})
        counts = pre.process_results({"page": page.text}, [-1.0])
        assert counts["word_perplexity"][1] == count_words(page.text)
        assert counts["bits_per_byte"][1] == count_bytes(page.text)
