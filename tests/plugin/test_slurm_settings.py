"""Under a multi-node Slurm job step, --genai-nnodes / --genai-rdzv-endpoint default from Slurm; {node} in paths."""
import json

import pytest

from pytest_genai.plugin.outputs import node_path

SHOW = """
def test_show(genai_settings):
    print("SETTINGS", genai_settings["nnodes"], genai_settings["rdzv_endpoint"])
"""
STEP = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_NNODES": "2", "SLURM_NODEID": "1",
        "SLURM_JOB_NODELIST": "gpu[03-04]"}


@pytest.fixture
def in_slurm_step(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: the built-in expansion is used
    for key, value in STEP.items():
        monkeypatch.setenv(key, value)


def test_settings_come_from_the_slurm_step(pytester, in_slurm_step):
    pytester.makepyfile(SHOW)
    result = pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*SETTINGS 2 gpu03:29507"])


def test_given_flags_win_over_slurm(pytester, in_slurm_step):
    pytester.makepyfile(SHOW)
    result = pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider", "--genai-nnodes", "1")
    result.stdout.fnmatch_lines(["*SETTINGS 1 None"])


def test_outside_slurm_nothing_changes(pytester, monkeypatch):
    for key in STEP:
        monkeypatch.delenv(key, raising=False)
    pytester.makepyfile(SHOW)
    pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider").stdout.fnmatch_lines(["*SETTINGS 1 None"])


def test_a_broken_slurm_environment_is_a_usage_error(pytester, in_slurm_step, monkeypatch):
    monkeypatch.setenv("SLURM_NNODES", "3")
    pytester.makepyfile(SHOW)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "SLURM_NNODES=3 but the node list 'gpu[03-04]' has 2 hosts" in result.stderr.str()


def test_node_in_the_benchmark_json_path_is_the_node_rank(pytester, in_slurm_step):
    pytester.makepyfile("def test_one(benchmark):\n    benchmark(lambda: None)\n")
    (pytester.path / "runs").mkdir()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--benchmark-json", "runs/node{node}.json",
                                         "--genai-scale", "tiny")
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "runs" / "node1.json").read_text())["benchmarks"]


def test_node_path():
    assert node_path("a/{node}.json", {"SLURM_NODEID": "4"}) == "a/4.json"
    assert node_path("a/{node}.json", {}) == "a/0.json"
    assert node_path("plain.json", {"SLURM_NODEID": "4"}) == "plain.json"
