"""Language-model evaluation with lm-evaluation-harness's definitions (Paper A, A1 tasks).

Importing this package imports nothing heavy; torch and transformers load inside the functions that need them.

Modules, one job each::

    data        WikiText-2 / HellaSwag / BoolQ loaders (--genai-data-dir or the local HF cache), seeded subsets
    text        lm-eval's wikitext detokenizer and word / byte counts
    windows     rolling and sliding token windows (pure)
    metrics     perplexities, bits per byte, acc / acc_norm (pure)
    scoring     batched log-likelihood of (context, continuation) token requests
    lm          EvalLM: model + tokenizer with lm-eval's tokenization rules
    tasks       sliding_perplexity, wikitext_rolling, hellaswag, boolq
    config      EvalBudget, EvalSettings, presets per --genai-scale
    runner      select data + run a task → TaskResult (flat metrics)
    models      --genai-model resolution, the embedded SmolLM2 (GGUF → cached fp32 safetensors), loading
    throughput  forward-only tokens/s helpers (threads pinned, synchronized)
    lmeval_compare  the same WikiText evaluation through lm-eval's HFLM, for a side-by-side check

Typical use::

    from pytest_genai.evals import config, models, runner
    from pytest_genai.evals.lm import EvalLM
    budget, settings = config.preset("tiny")
    loaded = models.load_model(models.resolve_model("smollm2-135m"))
    lm = EvalLM(loaded.model, loaded.tokenizer, max_length=settings.max_length, batch_size=settings.batch_size)
    task = runner.select("wikitext", budget, "../shared/data", lambda t: len(lm.encode(t)))
    result = runner.run_task(lm, task, settings)
    result.metrics["perplexity"], result.metrics["word_perplexity"]
"""
