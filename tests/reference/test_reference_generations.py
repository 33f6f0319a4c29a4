"""The generation claims judged on the reference runs by the gate's own code, with the paper's bounds unmoved."""
from __future__ import annotations

import pytest

from pytest_genai.claims import load_claims
from pytest_genai.reference import sources
from pytest_genai.reference.generations import judge, reading, table
from pytest_genai.reference.runs import runs_by_generation
from pytest_genai.report.gate import gate_runs
from pytest_genai.claims import default_metric_info
from pytest_genai.report.thresholds import Thresholds


@pytest.fixture(scope="module")
def summaries():
    return {s.claim_id: s for s in judge(sources.load("optimum-habana"), load_claims())}


def test_gaudi1_to_gaudi2_published_llama_lora_is_about_8x_against_the_papers_2_5_to_3x(summaries) -> None:
    s = summaries["A2.gen.gaudi_gaudi2"]
    assert s.bounds == "[2.5, 3]"  # the paper's bound, not moved by the vendor data
    lora = next(c for c in s.checks if "lora_clm_llama-7b_single_card" in c.benchmark)
    assert lora.speedup == pytest.approx(18.428 / 2.295)
    assert reading(lora) == "above the paper's range"
    assert all(reading(c) == "above the paper's range" for c in s.checks)


def test_gaudi2_to_gaudi3_is_mostly_below_the_papers_range(summaries) -> None:
    s = summaries["A2.gen.gaudi2_gaudi3"]
    below = [c for c in s.checks if reading(c) == "below the paper's range"]
    assert len(s.checks) >= 30 and len(below) > len(s.checks) / 2
    assert min(s.speedups) < 1 < max(s.speedups)


def test_the_verdicts_are_the_gates_own(summaries) -> None:
    runs = runs_by_generation(sources.load("optimum-habana"))
    claim = next(c for c in load_claims() if c.id == "A2.gen.gaudi_gaudi2")
    direct = gate_runs(runs["gaudi"], runs["gaudi2"], default_metric_info()[0], Thresholds(), [claim])
    assert [(c.benchmark, c.verdict, c.speedup) for c in direct.generation_checks] == [
        (c.benchmark, c.verdict, c.speedup) for c in summaries["A2.gen.gaudi_gaudi2"].checks]


def test_the_table_has_a_row_per_pair_with_both_published_lines(summaries) -> None:
    headers, rows = table(list(summaries.values()), sources.load("optimum-habana"))
    assert "lines (from, to)" in headers
    lora = next(r for r in rows if r[0] == "A2.gen.gaudi_gaudi2" and "llama-7b_single_card" in r[2])
    assert lora[headers.index("lines (from, to)")] == "18, 23"
