import pytest

from pytest_genai.evals import runner
from pytest_genai.evals.config import EvalBudget, EvalSettings
from pytest_genai.evals.lm import EvalLM


@pytest.fixture
def lm(model, tokenizer):
    return EvalLM(model, tokenizer, max_length=1024, batch_size=4)


def test_run_every_task_on_a_seeded_slice_of_the_shared_data(lm, shared_data_dir, caplog):
    caplog.set_level("INFO", logger="pytest_genai")
    budget = EvalBudget(wikitext_tokens=96, hellaswag=3, boolq=2)
    settings = EvalSettings(max_length=1024, context=64, stride=32, batch_size=4)
    count = lambda text: len(lm.encode(text))  # noqa: E731
    wiki = runner.select("wikitext", budget, shared_data_dir, count)
    assert wiki.source.endswith("test.raw") and sum(count(p) for p in wiki.examples.pages) <= 96
    result = runner.run_task(lm, wiki, settings)
    assert set(result.metrics) >= {"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte", "eval_tokens"}
    assert result.metrics["perplexity"] > 1 and result.input_tokens > 0 and result.eval_tokens_per_s > 0
    hs = runner.run_task(lm, runner.select("hellaswag", budget, shared_data_dir, count), settings)
    assert hs.n_examples == 3 and set(hs.metrics) == {"acc", "acc_stderr", "acc_norm", "acc_norm_stderr"}
    assert len(hs.per_example) == 3
    p = hs.metrics["acc"]  # lm-eval's acc_stderr: sqrt(p(1-p)/(n-1))
    assert hs.metrics["acc_stderr"] == pytest.approx((p * (1 - p) / 2) ** 0.5)
    bq = runner.run_task(lm, runner.select("boolq", budget, shared_data_dir, count), settings)
    assert bq.n_examples == 2 and set(bq.metrics) == {"acc", "acc_stderr"}
    logged = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("hellaswag: evaluating 3 examples") for m in logged)
    assert any(m.startswith("boolq: done in ") for m in logged) and any(m.startswith("wikitext: done in ") for m in logged)


def test_the_same_budget_selects_the_same_examples(shared_data_dir):
    budget = EvalBudget(hellaswag=5, seed=7)
    a = runner.select("hellaswag", budget, shared_data_dir, len)
    b = runner.select("hellaswag", budget, shared_data_dir, len)
    assert [i.idx for i in a.examples] == [i.idx for i in b.examples]
    other = runner.select("hellaswag", EvalBudget(hellaswag=5, seed=8), shared_data_dir, len)
    assert [i.idx for i in other.examples] != [i.idx for i in a.examples]
