"""This suite's evaluations against lm-evaluation-harness on the same model, examples and settings.

WikiText: both sides score the same seeded slice with lm-eval's rolling windows (window = the run's ``max_length``,
same batch size, same pinned threads): ours through ``pytest_genai.evals``, theirs through lm-eval's ``HFLM``
around the *same loaded model object* and its ``wikitext`` task functions. Recorded: both word perplexities and
their relative difference (asserted within 0.1%), both throughputs (model input tokens / median wall time of the
whole evaluation; off the CPU lm-eval gets one warm-up round, ours none: the session's fp32 baseline, computed once
for every row, runs the same windows through the same model just before, and ours must equal it) and the wall-time ratio, then one profiled run of ours: the matrix multiplies'
share of the time, their achieved TFLOP/s (and fraction of the device's fp32 peak), and the modeled ceiling on any
speedup over lm-eval for the same fp32 computation (lm-eval's time over our matmul time alone).

HellaSwag and BoolQ: the same (context, " " + choice) requests through both, per-example answers asserted identical,
our accuracies with lm-eval's standard error (``acc_stderr``, ``acc_norm_stderr``) and the same throughput records,
in interleaved rounds (after one warm-up round off the CPU): ``compare_rounds`` for HellaSwag, whose speed ratio is a claim, the preset's
``rounds`` for BoolQ, whose ratio is recorded but not judged.
What is recorded is built by ``pytest_genai.evals.lmeval_compare`` (``wikitext_result``, ``choice_result``). Ours packs each context with all its choices into one sequence; lm-eval runs one
sequence per choice (it reuses logits only when the choices are single tokens, as BoolQ's are).
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Any

import pytest

pytestmark = [pytest.mark.quant, pytest.mark.selfcheck, pytest.mark.slow]

WORD_PPL_TOLERANCE = 1e-3  # 0.1%: the two implementations compute the same quantity


@dataclasses.dataclass
class Side:
    """What both sides of a comparison share: the session, device, loaded model and our evaluation LM."""

    session: Any
    device: Any
    source: str
    threads: int | None
    model: Any
    tokenizer: Any
    lm: Any

    @property
    def settings(self) -> Any:
        return self.session.settings


def _setup(task: str, genai_device: Any, eval_model: Any, session: Any) -> Side:
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed: `pip install pytest-genai[lmeval]`")
    from pytest_genai.evals import data, throughput
    from pytest_genai.runtime.threads import pin_threads

    if genai_device.kind not in ("cpu", "cuda"):
        pytest.skip(f"lm-eval's HFLM runs on cpu or cuda; {genai_device.kind} is compared through its own harness")
    try:
        source = data.data_source(task, session.data_dir, session.budget)
    except data.DataUnavailable as exc:
        pytest.skip(str(exc))
    threads = pin_threads(session.settings.threads) if genai_device.kind == "cpu" else None
    fp32 = session.fp32_model(genai_device, eval_model)
    model, tokenizer = fp32.loaded.model, fp32.loaded.tokenizer
    return Side(session, genai_device, source, threads, model, tokenizer,
                session.eval_lm(model, tokenizer, genai_device))


def _start(genai: Any, side: Side, eval_model: Any, task: str, n_examples: int, **extra: Any) -> None:
    s = side.settings
    genai.start(model=eval_model.name, config={
        "mode": "fp32", "task": task, "comparison": "lm-eval", "data_source": side.source,
        **side.session.data_identity(task, eval_model, side.tokenizer), "n_examples": n_examples,
        "seed": side.session.budget.seed, **extra, "max_length": s.max_length, "batch_size": s.batch_size,
        "threads": side.threads,
    })


def _data_note(task: str, side: Side) -> str:
    from pytest_genai.evals import data

    return data.source_note(task, side.source)


def _hflm(side: Side) -> Any:
    from pytest_genai.evals import lmeval_compare

    return lmeval_compare.make_hflm(side.model, side.tokenizer, max_length=side.settings.max_length,
                                    batch_size=side.settings.batch_size, device=side.device.torch_device)


def _time_ours(benchmark: Any, side: Side, fn: Any, warmup: int = 1) -> tuple[Any, float]:
    runs = []

    def ours() -> None:
        runs.append(fn())
        side.device.synchronize()

    benchmark.pedantic(ours, rounds=side.settings.rounds, warmup_rounds=warmup, iterations=1)
    return runs[-1], benchmark.stats.stats.median


def _warmup_rounds(side: Side) -> int:
    """Untimed rounds before the timed ones: none on the CPU, one elsewhere. On the CPU the first round is not slower,
    even on a model no forward has run through yet (2026-12-01, 2 idle cores: HellaSwag ours 1.710 s then 1.726,
    1.717, 1.723, 1.725; lm-eval 3.468 then 3.429-3.459; WikiText lm-eval 3.05 then 3.11, 3.07); accelerators
    initialize libraries and autotune on the first call of each shape."""
    return 0 if side.device.kind == "cpu" else 1


def _time_both(benchmark: Any, side: Side, ours_fn: Any, theirs_fn: Any, rounds: int) -> tuple[Any, Any, list[float],
                                                                                               list[float]]:
    """Interleaved rounds (lm-eval, then ours; a warm-up round off the CPU) so a slow spell of a shared machine hits
    both: (our result, lm-eval's result, our seconds per round, lm-eval's seconds per round). pytest-benchmark times
    ours."""
    import time

    runs, theirs, their_s = [], [], []

    def setup() -> None:  # untimed by pytest-benchmark: lm-eval's call of this round, timed here
        side.device.synchronize()
        t0 = time.perf_counter()
        theirs.append(theirs_fn())
        side.device.synchronize()
        their_s.append(time.perf_counter() - t0)

    def ours() -> None:
        runs.append(ours_fn())
        side.device.synchronize()

    benchmark.pedantic(ours, setup=setup, rounds=rounds, warmup_rounds=_warmup_rounds(side), iterations=1)
    our_s = list(benchmark.stats.stats.data)[-rounds:]
    their_s = their_s[-rounds:]
    return runs[-1], theirs[-1], our_s, their_s


def _time_theirs(side: Side, fn: Any) -> tuple[Any, float]:
    from pytest_genai.evals import throughput

    runs = []
    times = throughput.time_rounds(lambda: runs.append(fn()), rounds=side.settings.rounds, warmup=_warmup_rounds(side),
                                   synchronize=side.device.synchronize)
    return runs[-1], statistics.median(times)


def test_wikitext_word_perplexity_and_speed_vs_lm_eval(benchmark, genai, genai_device, eval_model, fp32_eval_baseline):
    from pytest_genai.evals import lmeval_compare, tasks, throughput

    side = _setup("wikitext", genai_device, eval_model, fp32_eval_baseline)
    pages = side.session.task_data("wikitext", eval_model, side.tokenizer).examples.pages
    _start(genai, side, eval_model, "wikitext", len(pages), wikitext_tokens=side.session.budget.wikitext_tokens,
           wikitext_page_tokens=side.session.budget.wikitext_page_tokens)

    # The session's fp32 WikiText baseline (computed once, shared with the A1 rows) runs these same rolling windows
    # through this model object: it is our side's warm-up, and our timed result must equal it.
    baseline = side.session.baseline(side.device, eval_model, "wikitext")
    ours_result, ours_s = _time_ours(benchmark, side, lambda: tasks.wikitext_rolling(side.lm, pages), warmup=0)
    assert ours_result.word_perplexity == baseline.metrics["word_perplexity"], (
        "the timed rolling evaluation differs from the session's fp32 baseline on the same model and pages")
    hflm = _hflm(side)
    requests = lmeval_compare.wikitext_requests(pages)
    lls, theirs_s = _time_theirs(side, lambda: lmeval_compare.rolling_loglikelihoods(hflm, requests))
    theirs = lmeval_compare.wikitext_metrics(pages, lls)
    # Where the time goes: both sides run the same disjoint windows, so their matrix multiplies are fixed work; the
    # profile bounds what any faster implementation of the same fp32 computation could gain over lm-eval.
    prof = throughput.profile_ops(lambda: tasks.wikitext_rolling(side.lm, pages), device_kind=side.device.kind)
    peak = side.device.spec.peak_tflops("fp32") if side.device.spec else None
    genai.record(lmeval_compare.wikitext_result(ours_result, theirs, ours_s=ours_s, theirs_s=theirs_s, profile=prof,
                                                peak_tflops=peak, data_note=_data_note("wikitext", side)))
    rel_diff = lmeval_compare.relative_difference(ours_result.word_perplexity, theirs.word_perplexity)
    assert rel_diff <= WORD_PPL_TOLERANCE, (
        f"word perplexity {ours_result.word_perplexity:.6g} differs from lm-eval's {theirs.word_perplexity:.6g} "
        f"by {rel_diff:.2e} (> {WORD_PPL_TOLERANCE:.0e})")


def _choice_task(task: str, items: Any) -> tuple[list[str], list[tuple[str, ...]], list[int], bool]:
    """(contexts, choices, golds, normalize) of a multiple-choice task, as ``tasks.hellaswag`` / ``tasks.boolq``
    build them."""
    from pytest_genai.evals import tasks

    if task == "hellaswag":
        return [i.query for i in items], [tuple(i.endings) for i in items], [i.label for i in items], True
    return ([tasks.boolq_prompt(i) for i in items], [tasks.BOOLQ_CHOICES] * len(items), [i.label for i in items],
            False)


@pytest.mark.claims("A1.target.hellaswag_speedup_vs_lmeval", kinds=("cpu", "cuda"))
@pytest.mark.parametrize("task", ["hellaswag", "boolq"])
def test_multiple_choice_accuracy_and_speed_vs_lm_eval(benchmark, genai, genai_device, eval_model, fp32_eval_baseline,
                                                       task):
    from pytest_genai.evals import lmeval_compare, tasks

    side = _setup(task, genai_device, eval_model, fp32_eval_baseline)
    items = side.session.task_data(task, eval_model, side.tokenizer).examples[: side.settings.compare_examples]
    _start(genai, side, eval_model, task, len(items))
    contexts, choices, golds, normalize = _choice_task(task, items)

    pairs = [(ctx, " " + choice) for ctx, options in zip(contexts, choices) for choice in options]
    requests = lmeval_compare.loglikelihood_requests(pairs)
    hflm = _hflm(side)
    # HellaSwag's speed ratio is a claim, judged on its interval: compare_rounds. BoolQ's is recorded, not judged:
    # the preset's plain rounds, as every other recorded throughput.
    rounds = side.settings.compare_rounds if task == "hellaswag" else side.settings.rounds
    ours_result, lls, our_s, their_s = _time_both(
        benchmark, side, lambda: tasks.multiple_choice(side.lm, contexts, choices, golds, normalize=normalize),
        lambda: lmeval_compare.loglikelihoods(hflm, requests), rounds)
    theirs_correct, theirs_norm = lmeval_compare.choice_outcomes(lls, choices, golds, normalize)
    their_tokens = lmeval_compare.lmeval_input_tokens(side.lm, pairs, side.settings.max_length)
    genai.record(lmeval_compare.choice_result(ours_result, theirs_correct, theirs_norm, their_tokens=their_tokens,
                                              our_s=our_s, their_s=their_s, data_note=_data_note(task, side)))
    genai.check("A1.target.hellaswag_speedup_vs_lmeval")  # not_applicable for BoolQ and off the CPU
    assert list(ours_result.correct) == theirs_correct, f"per-example {task} answers differ from lm-eval's"
    if normalize:
        assert list(ours_result.correct_norm) == theirs_norm, f"per-example {task} acc_norm answers differ from lm-eval's"
