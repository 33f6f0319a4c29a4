"""--genai-require, through pytester: a required device kind that is absent or broken stops the session at start
with its reason, so a CI job on a Gaudi node without its software cannot go green having run nothing."""
import pytest

ABSENT_HPU = """
from pytest_genai.devices import ProbeResult

def pytest_genai_probes(config, probes):
    probes["hpu"] = lambda: ProbeResult("hpu", reason="habana_frameworks.torch is not installed")
"""

BROKEN_HPU = """
def pytest_genai_probes(config, probes):
    def broken():
        raise RuntimeError("driver exploded")
    probes["hpu"] = broken
"""

PRESENT_HPU = """
from pytest_genai.devices import Device, ProbeResult, get_spec

def pytest_genai_probes(config, probes):
    probes["hpu"] = lambda: ProbeResult("hpu", (Device("hpu", 0, "Fake Gaudi2 for tests", "gaudi2", get_spec("gaudi2")),))
"""

TESTS = "def test_on_hpu(hpu):\n    pass\n\ndef test_param(genai_device):\n    pass\n"


def test_without_the_requirement_an_absent_kind_skips_and_the_run_is_green(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ABSENT_HPU)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-m", "hpu", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK


def test_an_absent_required_kind_stops_the_session_at_start_naming_why(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ABSENT_HPU)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-m", "hpu", "--genai-require", "hpu", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: command-line option --genai-require: hpu is required but absent "
                                 "(habana_frameworks.torch is not installed); to enable: *Gaudi*"])
    # the README's install command, in a checkout ([hpu] would be an fnmatch character class)
    assert 'pip install -c ci/constraints-gaudi.txt -e ".[hpu]"` in a checkout' in result.stderr.str()
    assert "collected" not in result.stdout.str()  # stopped before collection: nothing ran


def test_a_broken_required_kind_stops_the_session_with_the_probes_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BROKEN_HPU)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--genai-require", "cpu,hpu", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: command-line option --genai-require: hpu is required but broken "
                                 "(RuntimeError: driver exploded); repair *"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_present_required_kind_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PRESENT_HPU)
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-m", "hpu", "--genai-require", "hpu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("form", ["env", "ini"])
def test_the_environment_and_ini_forms_name_themselves(pytester: pytest.Pytester, monkeypatch, form) -> None:
    pytester.makeconftest(ABSENT_HPU)
    pytester.makepyfile(TESTS)
    if form == "env":
        monkeypatch.setenv("GENAI_REQUIRE", "hpu")
        where = "environment variable GENAI_REQUIRE"
    else:
        pytester.makeini("[pytest]\ngenai_require = hpu\n")
        where = "ini setting genai_require"
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {where}: hpu is required but absent (*"])


def test_an_unknown_kind_or_one_left_out_of_genai_devices_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--genai-require", "gaudi", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: command-line option --genai-require: 'gaudi': not device kinds; use *hpu*"])
    result = pytester.runpytest("--genai-require", "hpu", "--genai-devices", "cpu", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: command-line option --genai-require: hpu required but not among "
                                 "command-line option --genai-devices (cpu); *"])
