"""Slurm: nodes, node rank and rendezvous endpoint from a job step's environment."""
import os
import stat

import pytest
from hypothesis import given, strategies as st

from pytest_genai.runtime import slurm

STEP = {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_NNODES": "3", "SLURM_NODEID": "1",
        "SLURM_JOB_NODELIST": "gpu[07-08],cpu1"}


@pytest.mark.parametrize("nodelist, hosts", [
    ("n[01-03,07],gpu5", ["n01", "n02", "n03", "n07", "gpu5"]),
    ("a1,b[2-3]x", ["a1", "b2x", "b3x"]),
    ("r1n[9-11]", ["r1n9", "r1n10", "r1n11"]),
    ("solo", ["solo"]),
])
def test_expand_nodelist(nodelist, hosts):
    assert slurm.expand_nodelist(nodelist) == hosts


@pytest.mark.parametrize("bad", ["n[01-", "n[a-b]", "", "a,,b", "n]1["])
def test_an_unreadable_nodelist_is_a_one_line_error_naming_it(bad):
    with pytest.raises(ValueError, match="SLURM_JOB_NODELIST=.*--genai-rdzv-endpoint"):
        slurm.expand_nodelist(bad)


@given(prefix=st.sampled_from(["n", "gpu-", "r1n"]), start=st.integers(0, 500), count=st.integers(1, 20),
       width=st.integers(1, 4))
def test_a_compressed_range_expands_to_every_host(prefix, start, count, width):
    hosts = [f"{prefix}{n:0{width}d}" for n in range(start, start + count)]
    lo, hi = f"{start:0{width}d}", f"{start + count - 1:0{width}d}"
    if len(lo) != len(hi) or len(lo) != width:  # Slurm pads to the width of the low bound only
        return
    assert slurm.expand_nodelist(f"{prefix}[{lo}-{hi}]") == hosts


def test_a_job_step_gives_nodes_rank_and_endpoint_on_the_first_host():
    step = slurm.from_env(STEP, hostnames=lambda _: None)
    assert (step.nnodes, step.node_rank, step.hosts) == (3, 1, ("gpu07", "gpu08", "cpu1"))
    assert step.rdzv_endpoint == f"gpu07:{slurm.BASE_PORT + 4242 % slurm.PORT_SPREAD}"
    assert slurm.from_env({**STEP, "GENAI_RDZV_PORT": "31000"}, hostnames=lambda _: None).port == 31000


def test_scontrol_wins_over_the_fallback_when_present():
    step = slurm.from_env(STEP, hostnames=lambda nodelist: ["x", "y", "z"])
    assert step.rdzv_endpoint.startswith("x:")


@pytest.mark.parametrize("env", [
    {},
    {k: v for k, v in STEP.items() if k != "SLURM_STEP_ID"},  # pytest typed on one node of an allocation
    {**STEP, "SLURM_NNODES": "1", "SLURM_JOB_NODELIST": "gpu07"},
])
def test_nothing_is_derived_outside_a_multi_node_job_step(env):
    assert slurm.from_env(env, hostnames=lambda _: None) is None


@pytest.mark.parametrize("env, match", [
    ({**STEP, "SLURM_NNODES": "2"}, "SLURM_NNODES=2 but the node list"),
    ({**STEP, "SLURM_NODEID": "5"}, "SLURM_NODEID=5 is outside"),
    ({**STEP, "SLURM_NNODES": "three"}, "must be integers"),
    ({**STEP, "GENAI_RDZV_PORT": "http"}, "GENAI_RDZV_PORT='http'"),
])
def test_inconsistent_slurm_environments_are_one_line_errors(env, match):
    with pytest.raises(ValueError, match=match):
        slurm.from_env(env, hostnames=lambda _: None)


def test_scontrol_hostnames_runs_scontrol(tmp_path, monkeypatch):
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] && printf 'h1\\nh2\\n' \n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert slurm.scontrol_hostnames("h[1-2]") == ["h1", "h2"]
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert slurm.scontrol_hostnames("h[1-2]") is None


def test_node_label():
    assert slurm.node_label({"SLURM_NODEID": "3"}) == "3"
    assert slurm.node_label({"GROUP_RANK": "2"}) == "2"
    assert slurm.node_label({}) == "0"
