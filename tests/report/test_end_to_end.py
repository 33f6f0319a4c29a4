"""End to end on real pytest sessions (pytester): a run, the same run deliberately slowed, then the gate, the
report, and the inline ``--genai-baseline`` check."""
import json
import re
from pathlib import Path

import pytest

from pytest_genai.cli.report import gate_main, report_main
from pytest_genai.results.errors import EXIT_OK, EXIT_REGRESSION

# A tiny deterministic workload; GENAI_TEST_SLOWDOWN repeats it without changing the config, the way a slower
# software change would. tokens_per_s is computed from pytest-benchmark's own median.
WORKLOAD = """
import os

N = 20_000


def work(repeat):
    total = 0
    for _ in range(repeat):
        total += sum(i * i for i in range(N))
    return total


def test_tokens(benchmark, genai, genai_device):
    genai.start(experiment="toy", device=genai_device, config={"n": N, "kernel": "sum_of_squares"}, model="none")
    repeat = int(os.environ.get("GENAI_TEST_SLOWDOWN", "1"))
    assert benchmark.pedantic(work, args=(repeat,), rounds=5, warmup_rounds=1) == repeat * sum(i * i for i in range(N))
    genai.metric("tokens_per_s", N / benchmark.stats.stats.median)
"""
ARGS = ("--genai-devices", "cpu", "-p", "no:cacheprovider")


@pytest.fixture
def two_runs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    pytester.makepyfile(test_toy=WORKLOAD)
    pytester.runpytest(*ARGS, "--benchmark-json", "base.json").assert_outcomes(passed=1)
    monkeypatch.setenv("GENAI_TEST_SLOWDOWN", "10")
    pytester.runpytest(*ARGS, "--benchmark-json", "slow.json").assert_outcomes(passed=1)
    return pytester.path / "base.json", pytester.path / "slow.json"


def test_gate_fails_the_slowed_run_with_a_table_naming_the_metrics(two_runs, capsys, pytester) -> None:
    base, slow = two_runs
    genai = json.loads(slow.read_text())["benchmarks"][0]["extra_info"]["genai"]
    assert genai["device"]["kind"] == "cpu" and "tokens_per_s" in genai["metrics"]

    assert gate_main([str(base), str(base)]) == EXIT_OK
    capsys.readouterr()
    # 10x the work: tokens/s drops ~90 %; a 50 % threshold leaves room for a busy machine's noise
    assert gate_main([str(base), str(slow), "--max-regression", "*=50%"]) == EXIT_REGRESSION
    out = capsys.readouterr().out
    failures = re.sub(r" +", " ", out.split("**FAIL**:")[1])  # columns are padded for terminals
    assert "| test_tokens[cpu] | cpu | tokens_per_s | dropped" in failures
    assert "| test_tokens[cpu] | cpu | benchmark_median_s | rose" in failures

    assert report_main([str(slow), "-o", str(pytester.path / "r.md"), "-o", str(pytester.path / "r.html")]) == EXIT_OK
    assert "## Experiment: toy — test_tokens" in (pytester.path / "r.md").read_text()
    assert "<h2>Experiment: toy — test_tokens</h2>" in (pytester.path / "r.html").read_text()


def test_inline_baseline_fails_the_regressed_benchmark_without_traceback(pytester, monkeypatch) -> None:
    pytester.makepyfile(test_toy=WORKLOAD)
    pytester.runpytest(*ARGS, "--benchmark-json", "base.json").assert_outcomes(passed=1)
    base = pytester.path / "base.json"
    monkeypatch.setenv("GENAI_TEST_SLOWDOWN", "10")
    result = pytester.runpytest(*ARGS, "--genai-baseline", str(base), "--genai-max-regression", "*=50%")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*genai baseline: test_tokens?cpu? regressed against*base.json",
        "*tokens_per_s: * -> * tokens/s (-*%; limit 50%, higher is better; point comparison: no rounds *)",
        "*benchmark_median_s: * -> * s (+*%; limit 50%, lower is better; ratio interval [[]*] (*, n=5) wholly past*",
        "*genai baseline: *base.json (thresholds: *=50%)*",
        "*test_toy.py::test_tokens?cpu?*REGRESSED: tokens_per_s, benchmark_median_s*",
        "*1 benchmark(s) compared, 1 regressed, 0 without a baseline match",
        "*1 failed in*",
    ])
    assert "Traceback" not in text and "def test_tokens" not in text  # no traceback, no source listing

    # The same workload again passes. The limit leaves room for a loaded CI machine (a 5-round median of a no-op-sized
    # loop moved by +60-100% there); tokens_per_s (higher is better) cannot fall by more than 100%.
    monkeypatch.setenv("GENAI_TEST_SLOWDOWN", "1")
    ok = pytester.runpytest(*ARGS, "--genai-baseline", str(base), "--genai-max-regression", "*=400%")
    ok.assert_outcomes(passed=1)
    ok.stdout.fnmatch_lines(["*test_tokens?cpu?*| ok*", "*1 benchmark(s) compared, 0 regressed*"])


def test_inline_baseline_bad_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_toy=WORKLOAD)
    (pytester.path / "bad.json").write_text('{"benchmarks": [')
    result = pytester.runpytest(*ARGS, "--genai-baseline", "bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--genai-baseline: */bad.json: invalid JSON*truncated*"])
    # every setting is validated at start, the thresholds' text with them: the bad token is named before the file
    bad = pytester.runpytest(*ARGS, "--genai-baseline", "bad.json", "--genai-max-regression", "tokens_per_s=5")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*command-line option --genai-max-regression: *'tokens_per_s=5'*percentage*"])
