"""Two pytest sessions on this machine as node 0 and node 1 of one job, the way docs/slurm.md runs them (Slurm's
variables per session, the rendezvous on 127.0.0.1, gloo), over the multi-node A2 fine-tuning and B2 scaling
benchmarks at tiny scale: both exit 0 within a bound, node 0's JSON records the rows, node 1's says it took part.
A divergent job sequence shows as a rendezvous that never completes (a timeout) or mismatched collectives."""
import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A fused-attention row with its unfused bracket before and after it (the bracketing that once ran on node 0 only),
#: and the B2 data-parallel scaling: 4 two-node jobs: 166 s on 2 cores at load average 5 (most of it the two sessions' start-up).
SELECT = "(test_finetune_throughput and cpu and attn_fused) or (test_parallel_scaling and cpu and dp)"
#: Node 1's RAM as its session reads it, in the second case: 4 MiB of 4 KiB pages (the tiny rows need ~100 MiB).
LOW_MEMORY_PLUGIN = """
import os
_sysconf = os.sysconf
os.sysconf = lambda name: 1024 if name == "SC_PHYS_PAGES" else _sysconf(name)
"""
BOUND_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session(node: int, port: int, out: Path, select: str, plugin: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_NNODES": "2",
           "SLURM_NODEID": str(node), "SLURM_JOB_NODELIST": "localhost,localhost", "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "pytest", "benchmarks/test_finetune.py", "benchmarks/test_dabench_level2.py",
            "-m", "", "-k", select, "-p", "no:cacheprovider", "-rs", "--genai-nnodes", "2", "--genai-nproc", "1",
            "--genai-rdzv-endpoint", f"127.0.0.1:{port}", "--genai-scale", "tiny", "--genai-timeout", "120",
            "--basetemp", str(out / f"tmp{node}"), "--benchmark-json", str(out / "node{node}.json")]
    if plugin:
        (out / "genai_node_plugin.py").write_text(plugin, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join([str(out), env.get("PYTHONPATH", "")])
        argv += ["-p", "genai_node_plugin"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=BOUND_S)


def _two_nodes(tmp_path, select=SELECT, node1_plugin=None):
    """Both sessions' JSON and output; each must exit 0 within BOUND_S."""
    port = _free_port()
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda n: _session(n, port, tmp_path, select, node1_plugin if n else None), (0, 1)))
    for n, proc in enumerate(done):
        assert proc.returncode == 0, f"node {n} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    return [json.loads((tmp_path / f"node{n}.json").read_text()) for n in (0, 1)], [p.stdout for p in done]


def _names(run):
    """The tests that recorded a row (pytest-benchmark also lists the timings of tests that skipped after it)."""
    return sorted(b["name"].split("[")[0] for b in run["benchmarks"] if b["extra_info"].get("genai"))


@pytest.mark.slow
def test_two_sessions_run_the_multi_node_benchmarks_as_one_job(tmp_path):
    (node0, node1), (out0, out1) = _two_nodes(tmp_path)
    assert _names(node0) == ["test_finetune_throughput", "test_parallel_scaling"], out0[-3000:]
    assert _names(node1) == [] and out1.count("took part in the") == 2, out1[-3000:]


@pytest.mark.slow
def test_a_node_that_reads_too_little_memory_stops_the_job_on_both_nodes(tmp_path):
    """Node 1 reads 4 MiB of RAM: both nodes still launch the same jobs, the ranks agree not to run them, node 0
    skips saying node 1's reason; neither waits for the other."""
    select = "test_finetune_throughput and cpu and attn_fused"
    (node0, node1), (out0, out1) = _two_nodes(tmp_path, select, LOW_MEMORY_PLUGIN)
    assert _names(node0) == [] and _names(node1) == []
    assert "planner, on the job's nodes: node 1: planner:" in out0, out0[-3000:]
    assert "took part in the" in out1, out1[-3000:]
