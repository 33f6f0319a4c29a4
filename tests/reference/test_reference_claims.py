"""A run of a configuration with a published counterpart carries a ``reference`` verdict.

On the CPU there is no vendor number, so this test writes its own reference row for the CPU configuration and names
it so; nothing here is a published measurement.
"""
from __future__ import annotations

import json

import pytest

from pytest_genai.claims.check import FAIL, PASS
from pytest_genai.claims.model import BASES
from pytest_genai.plugin.recorder import failing
from pytest_genai.reference.claims import Counterpart, check_run, counterparts


@pytest.fixture
def counterpart(cpu_test_row):
    """``counterpart(published)``: the CPU row published at ``published`` samples/s, as a counterpart."""
    def make(published: float) -> Counterpart:
        where = {"micro_batch": 2, "precision": "fp32", "world_size": 2, "seq_len": 128}
        return Counterpart(cpu_test_row(published), "samples_per_s", where, ("llama-3.1-8b",))

    return make


def test_a_run_matching_the_written_row_gets_a_reference_pass(cpu_run, counterpart) -> None:
    [(record, verdict)] = check_run(cpu_run(), [counterpart(85.0)])
    assert verdict.basis == "reference" and verdict.verdict == PASS
    assert "1.08x [1.06, 1.11] of the published 85 samples/s on cpu" in verdict.message


def test_a_run_whose_interval_straddles_the_published_number_is_inconclusive(cpu_run, counterpart) -> None:
    [(_, verdict)] = check_run(cpu_run(), [counterpart(92.0)])
    assert verdict.verdict == "inconclusive" and "1.00x" in verdict.message


def test_a_run_below_the_published_number_fails_its_reference_claim_without_failing_the_test(cpu_run,
                                                                                             counterpart) -> None:
    [(_, verdict)] = check_run(cpu_run(), [counterpart(200.0)])
    assert verdict.verdict == FAIL and "0.46x" in verdict.message
    assert not failing(verdict.verdict, verdict.basis, "enforce")
    assert not failing(verdict.verdict, verdict.basis, "strict")


def test_another_configuration_has_no_counterpart(cpu_run, counterpart) -> None:
    assert check_run(cpu_run(micro_batch=4), [counterpart(92.0)]) == []


def test_reference_is_a_claim_basis() -> None:
    assert "reference" in BASES


def test_published_rows_with_stated_batch_and_precision_become_counterparts() -> None:
    from pytest_genai.reference import sources

    found = counterparts(sources.load("optimum-habana"))
    lora = next(c for c in found if c.row.generation == "gaudi2" and "llama-7b_single_card" in c.row.row_id)
    # --bf16 is bf16 autocast: the suite's amp
    assert lora.where == {"micro_batch": 16, "precision": "amp", "world_size": 1} and lora.lora_rank == 8
    claim = lora.claim()
    assert claim.basis == "reference" and claim.min == pytest.approx(0.95 * 18.428)  # optimum-habana's own floor
    assert "seq_len" in claim.note  # what the source leaves unstated is said


def test_check_writes_the_verdict_into_the_run_and_the_report_shows_it_in_its_own_section(
        tmp_path, capsys, cpu_rows_file, cpu_run_doc) -> None:
    from pytest_genai.cli import main

    rows = cpu_rows_file
    run = tmp_path / "run.json"
    run.write_text(json.dumps(cpu_run_doc(92.0)))
    out = tmp_path / "with-reference.json"
    assert main(["reference", "check", str(run), "--rows", str(rows), "--write", str(out)]) == 0
    assert "reference pass" in capsys.readouterr().out
    [verdict] = json.loads(out.read_text())["benchmarks"][0]["extra_info"]["genai"]["claims"]
    assert verdict["basis"] == "reference" and verdict["verdict"] == "pass"
    report = tmp_path / "report.md"
    assert main(["report", str(out), "-o", str(report)]) == 0
    text = report.read_text()
    assert "## Vendor reference numbers" in text and "1.08x [1.06, 1.11] of the published 85" in text
    assert text.index("## Vendor reference numbers") > text.index("## Claims")
    assert main(["reference", "check", str(run), "--rows", str(rows), "--write", str(run)]) == 2
