"""Installed in an environment, the plugin acts only in sessions that use it: another project's session, with
stale ``GENAI_*`` variables exported, runs as if pytest-genai were absent."""
from __future__ import annotations

import json

import pytest

STALE = {"GENAI_DATA_DIR": "/nonexistent", "GENAI_SCALE": "huge", "GENAI_REPORT": "/nonexistent/r.md",
         "GENAI_DEVICES": "tpu"}

UNRELATED = """
import signal

def test_nothing_was_changed(request):
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # no handler installed
    handle = request.config.getoption("benchmark_json")
    assert type(handle).__module__ != "pytest_genai.plugin.outputs"  # pytest-benchmark's own option type

def test_timed(benchmark):
    benchmark(sum, range(10))
"""


def _stale(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in STALE.items():
        monkeypatch.setenv(name, value)


def test_another_project_with_stale_variables_runs_untouched(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _stale(monkeypatch)
    pytester.makepyfile(test_unrelated=UNRELATED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-json", "out.json")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    said = (result.stdout.str() + result.stderr.str()).replace("genai-0", "")  # pytest lists installed plugins
    assert "genai" not in said
    saved = json.loads((pytester.path / "out.json").read_text())
    assert "genai" not in saved and "genai" not in saved["machine_info"]


def test_a_genai_test_activates_the_plugin_and_its_settings_are_checked(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENAI_DATA_DIR", "/nonexistent")
    pytester.makepyfile(test_uses="def test_uses(genai):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: environment variable GENAI_DATA_DIR: /nonexistent: no such folder" in result.stderr.str()


def test_a_genai_option_activates_the_plugin_at_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--genai-scale", "huge")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--genai-scale" in result.stderr.str()


def test_a_genai_test_without_options_prints_the_header_after_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_dev="def test_dev(genai_settings):\n    assert genai_settings['scale'] == 'tiny'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["genai: devices *"])


def test_a_genai_ini_key_activates_the_plugin_at_start(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ngenai_scale = huge\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini setting genai_scale: 'huge' is not a scale" in result.stderr.str()

