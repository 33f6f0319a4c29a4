"""Run one task on one model with one budget: data selection, evaluation, and a flat result for recording."""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from pytest_genai import progress
from pytest_genai.evals import data, metrics, tasks
from pytest_genai.evals.config import EvalBudget, EvalSettings
from pytest_genai.evals.lm import EvalLM

_LOG = progress.logger(__name__)


@dataclasses.dataclass(frozen=True)
class TaskData:
    """The selected examples of one task (a :class:`data.WikiTextSlice` or a list of items) and their provenance."""

    task: str
    examples: Any
    n_examples: int
    source: str
    budget: EvalBudget


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """Metrics of one task run (names as in ``metrics_evals.toml``), per-example outcomes, and the work done."""

    task: str
    metrics: dict[str, float]
    per_example: tuple[float, ...]
    n_examples: int
    input_tokens: int
    seconds: float

    @property
    def eval_tokens_per_s(self) -> float:
        return self.input_tokens / self.seconds if self.seconds > 0 else float("nan")


def select(task: str, budget: EvalBudget, data_dir: Any, count_tokens: Callable[[str], int]) -> TaskData:
    """Load ``task``'s data (``--genai-data-dir`` or the local hub cache) and take the budget's seeded subset."""
    spec = data.get_task(task)
    loaded = data.load_task(task, data_dir)
    source = data.data_source(task, data_dir)
    examples = spec.select(loaded, budget, task, count_tokens)
    return TaskData(task, examples, spec.count(examples), source, budget)


def run_task(lm: EvalLM, task_data: TaskData, settings: EvalSettings, sync: Callable[[], None] = lambda: None) -> TaskResult:
    """Evaluate. WikiText gives the sliding-window ``perplexity`` plus lm-eval's ``word_perplexity``,
    ``byte_perplexity`` and ``bits_per_byte``; HellaSwag ``acc`` and ``acc_norm``; BoolQ ``acc``; each accuracy with
    lm-eval's ``*_stderr`` (standard error of the mean over examples)."""
    spec = data.get_task(task_data.task)
    _LOG.info("%s: evaluating %d %s (%s) ...", spec.name, task_data.n_examples, spec.unit, task_data.source)
    start = time.perf_counter()
    if spec.choices:
        result = getattr(tasks, spec.choices)(lm, task_data.examples)
        values = metrics.with_stderr("acc", result.correct)
        if result.correct_norm is not None:
            values.update(metrics.with_stderr("acc_norm", result.correct_norm))
        per_example, n, input_tokens = result.correct, result.n, result.input_tokens
    else:
        ppl = tasks.sliding_perplexity(lm, task_data.examples.text, context=settings.context, stride=settings.stride)
        rolling = tasks.wikitext_rolling(lm, task_data.examples.pages)
        values = {"perplexity": ppl.perplexity, "word_perplexity": rolling.word_perplexity,
                  "byte_perplexity": rolling.byte_perplexity, "bits_per_byte": rolling.bits_per_byte,
                  "rolling_token_perplexity": rolling.token_perplexity, "eval_tokens": ppl.scored_tokens}
        per_example, n = rolling.loglikelihoods, task_data.n_examples
        input_tokens = ppl.input_tokens + rolling.input_tokens
    sync()
    seconds = time.perf_counter() - start
    _LOG.info("%s: done in %.1f s", spec.name, seconds)
    return TaskResult(spec.name, values, per_example, n, input_tokens, seconds)
