"""A pytest-benchmark user's first hour, through pytester: the terminal metrics table, the software stack in
machine_info.genai, and --genai-baseline taking pytest-benchmark's storage ids."""
import json

import pytest

BENCH = """
import time


def test_ppl(benchmark, genai, cpu):
    time.sleep(0.3)
    genai.start(experiment="quant", device=cpu, config={"mode": "real"}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=2)
    genai.metric("tokens_per_s", 1234.5)
    genai.metric("perplexity", 12.25)
"""


def test_metrics_table_stack_and_latest_baseline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BENCH)
    first = pytester.runpytest("--benchmark-autosave", "--benchmark-json", "out.json", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    # the main metric (quality before throughput) with its value, unit and source
    # ... and the test's wall time (setup + call + teardown), in the table and in the JSON, labelled measured
    first.stdout.fnmatch_lines(["*pytest-genai metrics*", "benchmark*device*main metric*value*unit*source*wall*",
                                "test_ppl*cpu*perplexity*12.25*measured*",
                                "wall time: * s in all tests' setup, call and teardown (measured)*"])
    out = json.loads((pytester.path / "out.json").read_text())
    wall = out["benchmarks"][0]["extra_info"]["genai"]["test_wall"]
    assert wall["source"] == "measured" and 0.3 <= wall["seconds"] < 60, wall
    stack = out["machine_info"]["genai"]["stack"]
    assert stack["pytest-genai"] and stack["pytest-benchmark"] and "deepspeed" in stack and "nccl" in stack
    # a no-op's round time is noise: pytest-benchmark's field:N% form lifts its threshold
    again = pytester.runpytest("--genai-baseline", "latest", "--genai-max-regression", "median:100000%",
                               "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*genai baseline: *.benchmarks*0001_*.json*"])
    missing = pytester.runpytest("--genai-baseline", "0042", "-p", "no:cacheprovider")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--genai-baseline: 0042: no run 0042 in pytest-benchmark's storage *.benchmarks*"])


def test_main_metric_prefers_quality_then_throughput_then_the_first() -> None:
    from pytest_genai.plugin.summary import main_metric

    assert main_metric({"tokens_per_s": 1.0, "acc": 0.5, "acc_norm": 0.6}) == "acc_norm"
    assert main_metric({"step_time_s": 1.0, "samples_per_s": 9.0}) == "samples_per_s"
    assert main_metric({"max_layers": 3, "capacity_probes": 5}) == "max_layers"
    assert main_metric({}) is None
