"""A session's benchmark whose configuration has a published counterpart carries a ``reference`` verdict in its JSON.

On the CPU there is no vendor number: the test writes its own reference row for a tiny CPU configuration, named so
(``cpu-test-row (written by this test, not a vendor's number)``), and hands it to the session through
``GENAI_REFERENCE_ROWS``.
"""
from __future__ import annotations

import json

import pytest

from pytest_genai.plugin.reference_verdicts import ROWS_ENV, ReferenceRowsError, _counterparts

# A tiny CPU "fine-tune" whose samples/s the test sets: the rounds' median is 92 samples/s.
BENCHMARK = """
import os


def test_cpu_finetune(benchmark, genai, cpu):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    genai.start(experiment="finetune", device=cpu, model="llama-3.1-8b",
                config={"micro_batch": 2, "seq_len": 128, "precision": "fp32", "world_size": int(os.environ["WORLD"])})
    genai.metric("samples_per_s", 92.0, rounds=[90.0, 91.0, 92.0, 93.0, 94.0])
"""
ARGS = ("--genai-devices", "cpu", "-p", "no:cacheprovider", "--benchmark-json", "out.json", "--genai-report", "r.md")


def cpu_test_rows(published: float) -> list[dict]:
    """One reference row for the CPU configuration, written here: not a vendor's number."""
    return [{"row_id": "cpu-test-row (written by this test, not a vendor's number)", "experiment": "finetune",
             "model": "llama-3.1-8b", "task": "full fine-tune", "device_kind": "cpu", "generation": "cpu",
             "cards": 2, "identity": {}, "settings": {"batch_per_card": 2, "precision": "fp32", "seq_len": 128},
             "unstated": [], "metrics": {"samples_per_s": published}, "units": {"samples_per_s": "samples/s"},
             "provenance": {"source": "cpu-test-row", "repository": "written by tests/reference/test_reference_session.py",
                            "path": "-", "commit": "-", "line": 0, "date": "-"}}]


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Run the tiny benchmark with the CPU row published at ``published`` samples/s; its JSON's genai blocks."""
    pytester.makepyfile(test_cpu_finetune=BENCHMARK)

    def run(published: float, world: int = 2) -> tuple[dict, dict]:
        rows = pytester.path / "cpu-test-rows (written by this test).json"
        rows.write_text(json.dumps(cpu_test_rows(published)))
        monkeypatch.setenv(ROWS_ENV, str(rows))
        monkeypatch.setenv("WORLD", str(world))
        _counterparts.cache_clear()  # each run names its own rows
        pytester.runpytest(*ARGS).assert_outcomes(passed=1)
        doc = json.loads((pytester.path / "out.json").read_text())
        return doc["benchmarks"][0]["extra_info"]["genai"], doc["genai"]

    yield run
    _counterparts.cache_clear()


def test_a_matching_benchmark_carries_the_reference_verdict(session, pytester) -> None:
    genai, top = session(85.0)
    [verdict] = [c for c in genai["claims"] if c["basis"] == "reference"]
    assert verdict["verdict"] == "pass" and verdict["id"].startswith("ref.cpu-test-row.")
    assert "1.08x [1.06, 1.11] of the published 85 samples/s on cpu" in verdict["message"]
    assert [c["id"] for c in top["claims"]] == [verdict["id"]]  # the session's own list of verdicts too
    report = (pytester.path / "r.md").read_text()
    assert "## Vendor reference numbers" in report and "of the published 85 samples/s" in report


def test_a_missed_reference_number_is_recorded_and_the_test_still_passes(session) -> None:
    genai, _ = session(200.0)  # the session's assert_outcomes(passed=1) is the "never fails" half
    [verdict] = genai["claims"]
    assert verdict["verdict"] == "fail" and "0.46x" in verdict["message"]


def test_another_configuration_gets_no_reference_verdict(session) -> None:
    genai, top = session(85.0, world=4)
    assert genai["claims"] == [] and top["claims"] == []


def test_an_unreadable_rows_file_is_one_line_naming_the_variable(tmp_path) -> None:
    bad = tmp_path / "rows.json"
    bad.write_text("{}")
    with pytest.raises(ReferenceRowsError, match=rf"^{ROWS_ENV}=.*rows.json: expected a JSON list of rows"):
        _counterparts(str(bad))
