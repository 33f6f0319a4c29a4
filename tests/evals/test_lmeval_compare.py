import pytest

from pytest_genai.evals import lmeval_compare, tasks
from pytest_genai.evals.lm import EvalLM

from .test_tasks import PAGES

pytest.importorskip("lm_eval")


@pytest.mark.parametrize("batch_size", [1, 3])
def test_word_perplexity_equals_lm_eval_on_the_same_pages(model, tokenizer, batch_size):
    ours = tasks.wikitext_rolling(EvalLM(model, tokenizer, max_length=16, batch_size=batch_size), PAGES)
    hflm = lmeval_compare.make_hflm(model, tokenizer, max_length=16, batch_size=batch_size, device="cpu")
    lls = lmeval_compare.rolling_loglikelihoods(hflm, lmeval_compare.wikitext_requests(PAGES))
    theirs = lmeval_compare.wikitext_metrics(PAGES, lls)
    assert list(ours.loglikelihoods) == pytest.approx(list(theirs.loglikelihoods), rel=1e-5)
    assert ours.word_perplexity == pytest.approx(theirs.word_perplexity, rel=1e-5)
    assert ours.bits_per_byte == pytest.approx(theirs.bits_per_byte, rel=1e-5)
    assert ours.byte_perplexity == pytest.approx(theirs.byte_perplexity, rel=1e-5)
