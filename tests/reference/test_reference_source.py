"""``reference`` is a metric source of the JSON contract: the published runs pass the source checker with it, and a
session's benchmark cannot label its own number so."""
from __future__ import annotations

import pytest

from pytest_genai.claims.model import SOURCES, load_metrics
from pytest_genai.plugin.recorder import run_source_problems
from pytest_genai.reference import sources
from pytest_genai.reference.runs import run_json


def test_every_shipped_reference_run_passes_the_source_checker() -> None:
    assert "reference" in SOURCES
    registry = load_metrics()
    rows = [row for name in sources.SOURCES for row in sources.load(name)]
    problems = [f"{b['name']}: {p}" for b in run_json(rows)["benchmarks"]
                for p in run_source_problems(b["extra_info"]["genai"], registry)]
    assert not problems, problems[:5]


BENCHMARK = """
def test_labels_a_number_reference(benchmark, genai, cpu):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    genai.start(experiment="finetune", device=cpu, model="llama-3.1-8b", config={"micro_batch": 2})
    genai.metric("samples_per_s", 18.4, source="reference")
"""


def test_a_benchmark_cannot_record_a_number_as_reference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_reference_label=BENCHMARK)
    result = pytester.runpytest("--genai-devices", "cpu", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*genai.metric('samples_per_s'): 'reference' labels a vendor's published number*"])
