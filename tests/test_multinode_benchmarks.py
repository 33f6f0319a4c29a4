"""The benchmarks' multi-node and large-world paths without launching anything: the real benchmark functions run
with the launch replaced by a recorder, as node 0 and as node 1 of a job.

The benchmark files are loaded from their paths (``benchmarks`` is not importable by name under the bare ``pytest``).
"""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_module(name: str):
    spec = importlib.util.spec_from_file_location(f"_multinode_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


class FakeBenchmark:
    def pedantic(self, fn, args=(), kwargs=None, rounds=1, iterations=1):
        return fn(*args, **(kwargs or {}))


class FakeGenai:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


class FakeDevice:
    def __init__(self, kind="cpu", spec=None):
        self.kind, self.spec, self.index = kind, spec, 0


def _settings(nproc, nnodes, scale="tiny"):
    return {"scale": scale, "nnodes": nnodes, "nproc": nproc, "timeout": 60.0,
            "rdzv_endpoint": "127.0.0.1:29500" if nnodes > 1 else None}


# -- B2 Level 2 scaling ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["dp", "tp", "pp"])
def test_level2_scaling_on_node_1_takes_part_and_skips(monkeypatch, tmp_path, strategy):
    """run_parallel returns None on the nodes other than node 0: the row skips there, it does not index None."""
    from pytest_genai.dabench.level2 import run

    bench = _benchmark_module("test_dabench_level2")
    launched = []
    monkeypatch.setattr(run, "run_parallel", lambda configs, work, **kw: launched.append(configs) or None)
    genai = FakeGenai()
    with pytest.raises(pytest.skip.Exception, match="node 0 records it"):
        bench.test_parallel_scaling(FakeBenchmark(), genai, FakeDevice(), _settings(1, 2), strategy, tmp_path)
    assert len(launched) == 1  # it took part in the job
    assert not [c for c in genai.calls if c[0] in ("record", "check")]


def test_level2_pipeline_with_more_stages_than_layers_skips_saying_why(monkeypatch, tmp_path):
    from pytest_genai.dabench.level2 import run

    bench = _benchmark_module("test_dabench_level2")
    monkeypatch.setattr(run, "run_parallel", lambda *a, **k: pytest.fail("launched a pipeline it cannot split"))
    with pytest.raises(pytest.skip.Exception, match=r"pp at world size 16: .* 9 layers"):
        bench.test_parallel_scaling(FakeBenchmark(), FakeGenai(), FakeDevice(), _settings(8, 2), "pp", tmp_path)


@pytest.mark.parametrize("kind", ["cpu", "cuda"])
@pytest.mark.parametrize("scale", ["tiny", "small", "full"])
def test_level2_scaling_world_sizes_1_to_64_never_error(kind, scale):
    from pytest_genai.dabench.level2.config import STRATEGIES, scaling_run

    for strategy in STRATEGIES:
        for world in range(1, 65):
            cfg, why = scaling_run(strategy, kind, scale, world)
            assert (cfg is None) != (why is None)
            if cfg is not None:
                assert cfg.world_size == world
            else:
                assert str(world) in why or world == 1
