"""genai.record(result) and genai.start()'s defaults (experiment from the file's registry row, device from
genai_device), through pytester."""
import json

import pytest

from pytest_genai.results.measurement import Measurement, Result, rounds_of

BENCH = """
import pytest
from pytest_genai.results.measurement import Measurement, Result

def test_scaling(benchmark, genai, genai_device):
    genai.start(config={"world_size": 2}, model="m")
    benchmark.pedantic(lambda: None, rounds=1)
    genai.record(Result({"world_size": 2,
                         "scaling_throughput_ratio": Measurement(1.8, rounds=(1.7, 1.8, 1.9, 1.8, 1.85))},
                        labels={"note": "two ranks"}, attachments={"curve": [{"batch": 1}, {"batch": 2}]}))
"""


def test_record_and_start_defaults(pytester):
    bench = pytester.mkdir("benchmarks")
    (bench / "test_diffusion.py").write_text(BENCH)
    result = pytester.runpytest("benchmarks", "-m", "cpu", "-p", "no:cacheprovider", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1)
    genai = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["extra_info"]["genai"]
    assert genai["experiment"] == "diffusion" and genai["device"]["kind"] == "cpu"
    assert genai["metrics"] == {"world_size": 2, "scaling_throughput_ratio": 1.8}
    assert genai["metric_sources"]["world_size"] == "config"  # the registry's source, not "measured"
    assert genai["metric_rounds"]["scaling_throughput_ratio"] == [1.7, 1.8, 1.9, 1.8, 1.85]
    assert genai["metric_intervals"]["scaling_throughput_ratio"]["n"] == 5
    assert genai["labels"] == {"note": "two ranks"}
    assert genai["attachments"] == {"curve": [{"batch": 1}, {"batch": 2}]}  # no PSI in tests: no cpu_contention


def test_start_outside_a_registered_file_names_the_fix(pytester):
    pytester.makepyfile(test_mine="def test_x(benchmark, genai):\n    genai.start()\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_mine.py is not a registered benchmark file*pass experiment=...*"])


def test_record_refuses_what_has_no_metrics():
    from pytest_genai.plugin.recorder import GenaiRecorder

    recorder = GenaiRecorder.__new__(GenaiRecorder)
    with pytest.raises(TypeError, match="genai.record: int has no 'metrics' mapping"):
        recorder.record(3)


def test_result_is_frozen():
    r = Result({"a": Measurement(1.0, source="modeled")})
    with pytest.raises(AttributeError):
        r.metrics = {}  # type: ignore[misc]


def test_result_problems_names_each_metric_the_recorder_would_not_take_as_built():
    from pytest_genai.results.measurement import Measurement, Result
    from pytest_genai.plugin.recorder import result_problems

    ok = Result({"tokens_per_s": Measurement(1.0, "measured")})
    assert result_problems(ok) == []
    bad = Result({"tokens_per_s": 1.0, "no_such_metric_xyz": Measurement(1.0, "measured"),
                  "bytes_moved_modeled": Measurement(1.0, "measured")})
    problems = result_problems(bad)
    assert [p.split(":")[0] for p in problems] == ["tokens_per_s", "no_such_metric_xyz", "bytes_moved_modeled"]
    assert "explicit source" in problems[0] and "registered" in problems[1] and "modeled" in problems[2]


@pytest.mark.parametrize(("values", "expected"), [((), None), ([3], None), ((1, 2.5), (1.0, 2.5)),
                                                  ((x / 2 for x in range(3)), (0.0, 0.5, 1.0))])
def test_rounds_of_keeps_two_or_more_rounds_and_drops_a_single_value(values, expected):
    # one value has no spread: recorded as rounds it would be judged as a sample of one, so it stays a point
    assert rounds_of(values) == expected
