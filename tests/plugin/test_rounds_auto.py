"""``--genai-rounds auto --genai-time-budget``: a timing benchmark whose interval cannot decide its claim (or its
gate threshold against ``--genai-baseline``) takes more rounds within the budget, and the JSON says how many and
why they stopped."""
import json

import pytest

BANDWIDTH_TEST = """
import statistics

import pytest

from pytest_genai.runtime.rounds import run_rounds


@pytest.mark.claims("A1.target.sensitivity_bandwidth", kinds=("cpu",))
def test_bandwidth(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu, config={"workload": "bw"}, model="tiny")
    # rounds around CENTER: the first 5 spread +-WIDE (their interval straddles the 0.5 target), the rest +-NARROW
    values = []
    value = lambda i: CENTER + ((WIDE if i % 2 else -WIDE) if i < 5 else (NARROW if i % 2 else -NARROW))
    loop = run_rounds(lambda i: values.append(value(i)), 5, genai.rounds_policy,
                      lambda: genai.decided("sensitivity_bandwidth_fraction", values))
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("sensitivity_bandwidth_fraction", statistics.median(values), rounds=values)
    genai.note_rounds("sensitivity_bandwidth_fraction", loop)
    genai.check("A1.target.sensitivity_bandwidth")
"""


def _test(center: float = 0.53, wide: float = 0.06, narrow: float = 0.001) -> str:
    return BANDWIDTH_TEST.replace("CENTER", str(center)).replace("WIDE", str(wide)).replace("NARROW", str(narrow))


def _bench(pytester: pytest.Pytester, *args: str) -> dict:
    pytester.makepyfile(_test())
    result = pytester.runpytest("--benchmark-json", "out.json", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    (bench,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    return bench["extra_info"]["genai"]


def test_fixed_rounds_leave_the_claim_inconclusive_and_say_so(pytester: pytest.Pytester) -> None:
    genai = _bench(pytester)
    assert genai["rounds"]["sensitivity_bandwidth_fraction"] == {
        "mode": "fixed", "planned": 5, "rounds": 5, "stopped": "fixed",
        "seconds_measured": genai["rounds"]["sensitivity_bandwidth_fraction"]["seconds_measured"]}
    assert genai["claims"][0]["verdict"] == "inconclusive"


def test_auto_rounds_decide_the_claim_and_record_why_they_stopped(pytester: pytest.Pytester) -> None:
    genai = _bench(pytester, "--genai-rounds", "auto", "--genai-time-budget", "30s")
    loop = genai["rounds"]["sensitivity_bandwidth_fraction"]
    assert loop["mode"] == "auto" and loop["stopped"] == "decided" and loop["budget_s"] == 30.0
    # 15 rounds: the first whose median interval lies above 0.5 (the order statistics of the rounds above), and
    # narrower than half the 5% default gate threshold
    assert loop["rounds"] == 15 == len(genai["metric_rounds"]["sensitivity_bandwidth_fraction"])
    assert genai["claims"][0]["verdict"] == "pass"


def test_a_spent_budget_stops_auto_rounds(pytester: pytest.Pytester) -> None:
    genai = _bench(pytester, "--genai-rounds", "auto", "--genai-time-budget", "0")
    loop = genai["rounds"]["sensitivity_bandwidth_fraction"]
    assert (loop["rounds"], loop["stopped"]) == (5, "time_budget")


def test_auto_rounds_run_until_the_gate_threshold_is_decided(pytester: pytest.Pytester) -> None:
    """With --genai-baseline, the gate row against the baseline's rounds decides when to stop (here: 11% below a baseline of 0.9, past the 5% default threshold, where the first 5 rounds straddle it)."""
    pytester.makepyfile(_test(0.9, 0.001))
    pytester.runpytest("--benchmark-json", "base.json", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(_test(0.8, 0.2, 0.03))  # every round >= 0.5: the claim passes at 5
    result = pytester.runpytest("--benchmark-json", "out.json", "-p", "no:cacheprovider", "--genai-baseline",
                                "base.json", "--genai-rounds", "auto", "--genai-time-budget", "30s",
                                "--genai-run-noise", "0")  # rounds alone: what more rounds can decide
    result.assert_outcomes(failed=1)  # the decided regression fails the benchmark, as --genai-baseline does
    (bench,) = json.loads((pytester.path / "out.json").read_text())["benchmarks"]
    loop = bench["extra_info"]["genai"]["rounds"]["sensitivity_bandwidth_fraction"]
    assert loop["stopped"] == "decided" and loop["rounds"] > 5
    result.stdout.fnmatch_lines(["*sensitivity_bandwidth_fraction*"])
    # without the baseline, rounds +-0.03 never get the interval under half the 5% threshold (0.02 at 0.8):
    # the cap stops them. The gate row is what decided above.
    pytester.runpytest("--benchmark-json", "alone.json", "-p", "no:cacheprovider", "--genai-rounds", "auto")
    (alone,) = json.loads((pytester.path / "alone.json").read_text())["benchmarks"]
    alone_loop = alone["extra_info"]["genai"]["rounds"]["sensitivity_bandwidth_fraction"]
    assert (alone_loop["rounds"], alone_loop["stopped"]) == (200, "max_rounds")


@pytest.mark.parametrize("args, message", [
    (("--genai-rounds", "lots"), "*command-line option --genai-rounds: 'lots' is not a rounds mode; write auto*"),
    (("--genai-time-budget", "soon"), "*command-line option --genai-time-budget: 'soon' is not a duration*"),
])
def test_bad_rounds_settings_are_one_line_usage_errors(pytester: pytest.Pytester, args, message) -> None:
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()
