"""This suite's evaluations against lm-evaluation-harness on the same model, examples and settings.

WikiText: both sides score the same seeded slice with lm-eval's rolling windows (window = the run's ``max_length``,
same batch size, same pinned threads): ours through ``pytest_genai.evals``, theirs through lm-eval's ``HFLM``
around the *same loaded model object* and its ``wikitext`` task functions. Recorded: both word perplexities and
their relative difference (asserted within 0.1%), both throughputs (model input tokens / median wall time of the
whole evaluation, one warm-up round each) and the wall-time ratio, then one profiled run of ours: the matrix multiplies'
share of the time, their achieved TFLOP/s (and fraction of the device's fp32 peak), and the modeled ceiling on any
speedup over lm-eval for the same fp32 computation (lm-eval's time over our matmul time alone). HellaSwag: the same requests through both,
per-example answers asserted identical, and the same throughput records.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.quant

WORD_PPL_TOLERANCE = 1e-3  # 0.1%: the two implementations compute the same quantity


def test_wikitext_word_perplexity_and_speed_vs_lm_eval(benchmark, genai, genai_device, eval_model, fp32_eval_baseline):
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed: `pip install pytest-genai[lmeval]`")
    from pytest_genai.evals import data, lmeval_compare, metrics, tasks, throughput

    session = fp32_eval_baseline
    device = genai_device
    if device.kind not in ("cpu", "cuda"):
        pytest.skip(f"lm-eval's HFLM runs on cpu or cuda; {device.kind} is compared through its own harness")
    try:
        source = data.data_source("wikitext", session.data_dir)
    except data.DataUnavailable as exc:
        pytest.skip(str(exc))
    settings = session.settings
    threads = throughput.pin_threads(settings.threads) if device.kind == "cpu" else None
    fp32 = session.fp32_model(device, eval_model)
    model, tokenizer = fp32.loaded.model, fp32.loaded.tokenizer
    pages = session.task_data("wikitext", eval_model, tokenizer).examples.pages
    lm = session.eval_lm(model, tokenizer, device)

    genai.start(experiment="quant", device=device, model=eval_model.name, config={
        "mode": "fp32", "task": "wikitext", "comparison": "lm-eval", "data_source": source, "n_examples": len(pages),
        "seed": session.budget.seed, "wikitext_tokens": session.budget.wikitext_tokens,
        "max_length": settings.max_length, "batch_size": settings.batch_size, "threads": threads,
    })
    genai.label("data", data.source_note("wikitext", source))

    ours_runs = []

    def ours():
        ours_runs.append(tasks.wikitext_rolling(lm, pages))
        device.synchronize()

    benchmark.pedantic(ours, rounds=settings.rounds, warmup_rounds=1, iterations=1)
    ours_result = ours_runs[-1]
    ours_s = benchmark.stats.stats.median

    hflm = lmeval_compare.make_hflm(model, tokenizer, max_length=settings.max_length, batch_size=settings.batch_size,
                                    device=device.torch_device)
    requests = lmeval_compare.wikitext_requests(pages)
    theirs_runs = []
    times = throughput.time_rounds(lambda: theirs_runs.append(lmeval_compare.rolling_loglikelihoods(hflm, requests)),
                                   rounds=settings.rounds, warmup=1, synchronize=device.synchronize)
    theirs = lmeval_compare.wikitext_metrics(pages, theirs_runs[-1])
    theirs_s = throughput.median(times)

    tokens = ours_result.input_tokens  # the same windows on both sides (tests pin window equality with lm-eval's)
    rel_diff = abs(ours_result.word_perplexity - theirs.word_perplexity) / theirs.word_perplexity
    genai.metric("word_perplexity", ours_result.word_perplexity)
    genai.metric("lmeval_word_perplexity", theirs.word_perplexity)
    genai.metric("word_ppl_rel_diff", rel_diff)
    genai.metric("bits_per_byte", ours_result.bits_per_byte)
    genai.metric("eval_input_tokens", tokens)
    genai.metric("tokens_per_s", throughput.tokens_per_s(tokens, ours_s))
    genai.metric("lmeval_tokens_per_s", throughput.tokens_per_s(tokens, theirs_s))
    speedup = genai.metric("speedup_vs_lmeval", metrics.ratio(theirs_s, ours_s))
    # Where the time goes: both sides run the same disjoint windows, so their matrix multiplies are fixed work; the
    # profile bounds what any faster implementation of the same fp32 computation could gain over lm-eval.
    prof = throughput.profile_ops(lambda: tasks.wikitext_rolling(lm, pages), device_kind=device.kind)
    genai.metric("matmul_time_share", prof.matmul_share)
    genai.metric("matmul_tflops", prof.matmul_tflops)
    peak = device.spec.peak_tflops("fp32") if device.spec else None
    if peak:
        genai.metric("matmul_fraction_of_peak", prof.matmul_tflops / peak)
    genai.metric("modeled_speedup_ceiling_vs_lmeval", speedup / prof.matmul_share, source="modeled")
    assert rel_diff <= WORD_PPL_TOLERANCE, (
        f"word perplexity {ours_result.word_perplexity:.6g} differs from lm-eval's {theirs.word_perplexity:.6g} "
        f"by {rel_diff:.2e} (> {WORD_PPL_TOLERANCE:.0e})")


def test_hellaswag_accuracy_and_speed_vs_lm_eval(benchmark, genai, genai_device, eval_model, fp32_eval_baseline):
    """HellaSwag through both: the same (query, " " + ending) requests; ours shares each query's computation across
    its four endings, lm-eval runs four full sequences (it reuses logits only for one-token continuations)."""
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed: `pip install pytest-genai[lmeval]`")
    from pytest_genai.evals import data, lmeval_compare, metrics, tasks, throughput

    session = fp32_eval_baseline
    device = genai_device
    if device.kind not in ("cpu", "cuda"):
        pytest.skip(f"lm-eval's HFLM runs on cpu or cuda; {device.kind} is compared through its own harness")
    try:
        source = data.data_source("hellaswag", session.data_dir)
    except data.DataUnavailable as exc:
        pytest.skip(str(exc))
    settings = session.settings
    threads = throughput.pin_threads(settings.threads) if device.kind == "cpu" else None
    fp32 = session.fp32_model(device, eval_model)
    model, tokenizer = fp32.loaded.model, fp32.loaded.tokenizer
    items = session.task_data("hellaswag", eval_model, tokenizer).examples[: settings.compare_examples]
    lm = session.eval_lm(model, tokenizer, device)

    genai.start(experiment="quant", device=device, model=eval_model.name, config={
        "mode": "fp32", "task": "hellaswag", "comparison": "lm-eval", "data_source": source, "n_examples": len(items),
        "seed": session.budget.seed, "max_length": settings.max_length, "batch_size": settings.batch_size,
        "threads": threads,
    })
    genai.label("data", data.source_note("hellaswag", source))
    ours_runs = []

    def ours():
        ours_runs.append(tasks.hellaswag(lm, items))
        device.synchronize()

    benchmark.pedantic(ours, rounds=settings.rounds, warmup_rounds=1, iterations=1)
    ours_result, ours_s = ours_runs[-1], benchmark.stats.stats.median

    hflm = lmeval_compare.make_hflm(model, tokenizer, max_length=settings.max_length, batch_size=settings.batch_size,
                                    device=device.torch_device)
    requests = lmeval_compare.loglikelihood_requests([(i.query, " " + e) for i in items for e in i.endings])
    theirs_runs = []
    times = throughput.time_rounds(lambda: theirs_runs.append(lmeval_compare.loglikelihoods(hflm, requests)),
                                   rounds=settings.rounds, warmup=1, synchronize=device.synchronize)
    theirs_s = throughput.median(times)
    lls = theirs_runs[-1]
    theirs_correct, theirs_norm = [], []
    for k, item in enumerate(items):
        item_lls = lls[4 * k: 4 * k + 4]
        theirs_correct.append(metrics.choice_correct(item_lls, item.label))
        theirs_norm.append(metrics.choice_correct_norm(item_lls, item.endings, item.label))

    # lm-eval's work: every request is one full sequence (query + ending, minus the last token)
    their_tokens = sum(len(w.context) + len(w.continuation) - 1
                       for w in (lm.encode_pair(i.query, " " + e) for i in items for e in i.endings))
    genai.metric("acc", ours_result.acc)
    genai.metric("acc_norm", ours_result.acc_norm)
    genai.metric("lmeval_acc", metrics.mean(theirs_correct))
    genai.metric("lmeval_acc_norm", metrics.mean(theirs_norm))
    genai.metric("eval_input_tokens", ours_result.input_tokens)
    genai.metric("lmeval_input_tokens", their_tokens)
    # each side's own input tokens per second; the speedup is the wall-time ratio on the same examples
    genai.metric("tokens_per_s", throughput.tokens_per_s(ours_result.input_tokens, ours_s))
    genai.metric("lmeval_tokens_per_s", throughput.tokens_per_s(their_tokens, theirs_s))
    genai.metric("speedup_vs_lmeval", metrics.ratio(theirs_s, ours_s))
    assert list(ours_result.correct) == theirs_correct and list(ours_result.correct_norm) == theirs_norm, (
        "per-example HellaSwag answers differ from lm-eval's on the same requests")
