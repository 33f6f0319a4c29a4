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


@pytest.mark.parametrize("kind, says, never", [("hpu", "test_batch_size_sweep and test_precision", "run logs"),
                                               ("rdu", "vendor's run logs", "no rdu path")])
def test_level2_scaling_skips_gaudi_naming_what_runs_there_not_vendor_logs(tmp_path, kind, says, never):
    """Gaudi has no vendor run logs to read: its skip names the Level 2 rows that do run on it."""
    bench = _benchmark_module("test_dabench_level2")
    with pytest.raises(pytest.skip.Exception) as skipped:
        bench.test_parallel_scaling(FakeBenchmark(), FakeGenai(), FakeDevice(kind), _settings(1, 1), "dp", tmp_path)
    assert says in str(skipped.value) and never not in str(skipped.value)


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


# -- A3 diffusion: the Gaudi execution mode is part of the row ---------------------------------------------------------
class FakeHpu(FakeDevice):
    def __init__(self):
        super().__init__("hpu")

    def reset_peak_memory(self):
        pass

    def peak_memory_bytes(self):
        return None


def _config_of(genai):
    (start,) = [c for c in genai.calls if c[0] == "start"]
    return start[2]["config"]


@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_diffusion_throughput_row_names_the_gaudi_mode_that_ran(monkeypatch, mode):
    pytest.importorskip("torch")
    from pytest_genai.diffusion.train import TrainResult
    from pytest_genai.runtime import hpu_mode

    bench = _benchmark_module("test_diffusion")
    monkeypatch.setattr(hpu_mode, "running_mode", lambda: mode)
    monkeypatch.setattr(bench, "train_steps", lambda cfg, device: TrainResult((0.1, 0.1, 0.1), (1.0, 0.5, 0.4, 0.3),
                                                                             8, 1e9))
    genai = FakeGenai()
    bench.test_diffusion_training_throughput(FakeBenchmark(), genai, FakeHpu(), "bf16")
    assert _config_of(genai)["hpu_mode"] == mode


def test_diffusion_ddp_row_names_the_gaudi_mode_and_checks_the_ranks_ran_in_it(monkeypatch, tmp_path):
    from pytest_genai.devices import ranks
    from pytest_genai.diffusion import ddp

    bench = _benchmark_module("test_diffusion")
    monkeypatch.setattr(ranks, "ranks_problem", lambda kind, nproc: None)

    def fake_run(cfg, world, work, **kwargs):
        return {"world_size": world, "baseline": {"step_times_s": [0.1, 0.1], "images_per_step": 8},
                "ranks": [{"rank": r, "step_times_s": [0.1, 0.1], "losses": [1.0, 0.5, 0.4, 0.3],
                           "images_per_step": 8, "flops_per_step": 1e9, "hpu_mode": "lazy"} for r in range(world)]}

    monkeypatch.setattr(ddp, "run_ddp", fake_run)
    genai = FakeGenai()
    bench.test_diffusion_ddp_scaling(FakeBenchmark(), genai, FakeHpu(), _settings(2, 1), tmp_path)
    assert _config_of(genai)["hpu_mode"] == "lazy"


def test_diffusion_rows_in_lazy_and_eager_mode_have_different_identities():
    from pytest_genai.diffusion import DiffusionConfig
    from pytest_genai.diffusion.results import row_config
    from pytest_genai.identity import split_config

    cfg = DiffusionConfig()
    lazy, eager = (split_config(row_config(cfg, "hpu", m, id=cfg.id)).identity for m in ("lazy", "eager"))
    assert lazy != eager
    assert "hpu_mode" not in row_config(cfg, "cpu", id=cfg.id)  # rows recorded elsewhere keep their identity
    with pytest.raises(ValueError, match="execution mode"):
        row_config(cfg, "hpu")


def test_ddp_summary_refuses_ranks_in_different_modes():
    from pytest_genai.diffusion.ddp import summarize

    result = {"world_size": 2, "baseline": {"step_times_s": [0.1], "images_per_step": 8},
              "ranks": [{"rank": r, "step_times_s": [0.1], "losses": [1.0], "images_per_step": 8,
                         "flops_per_step": 1e9, "hpu_mode": m} for r, m in enumerate(("lazy", "eager"))]}
    with pytest.raises(ValueError, match="different Gaudi execution modes"):
        summarize(result)


# -- A2 fine-tuning: every node launches the same jobs -----------------------------------------------------------------
class _Recording(Exception):
    """Raised when node 0 starts reading its summary: every launch of the test is over by then."""


class _Summary:
    def __getattr__(self, name):
        raise _Recording(name)


class FakeCpu(FakeDevice):
    def __init__(self, mem_gb=64.0):
        from pytest_genai.devices.specs import DeviceSpec

        super().__init__("cpu", DeviceSpec(generation="cpu", kind="cpu", name="fake", source="measured: fake",
                                           mem_capacity_gb=mem_gb))


def _finetune_launches(monkeypatch, tmp_path, cfg, node_rank, mem_gb=64.0, problems=None):
    """The job ids one node launches for ``cfg``, as node ``node_rank`` of 2 whose RAM is ``mem_gb`` (nothing is
    launched for real); ``problems`` collects the node problem each job carried."""
    from pytest_genai.runtime.launcher import LaunchSpec
    from pytest_genai.train import run

    bench = _benchmark_module("test_finetune")
    launched = []

    def fake_run(job_cfg, kind, spec, work, env=None, node_problem=None):
        launched.append(job_cfg.id)
        if problems is not None:
            problems.append(node_problem)
        return _Summary() if node_rank == 0 else None

    monkeypatch.setattr(run, "run", fake_run)
    spec = LaunchSpec(nproc=1, nnodes=2, rdzv_endpoint="127.0.0.1:29500", node_rank=node_rank)
    runs = run.RunCache(tmp_path / f"node{node_rank}")
    try:
        bench.test_finetune_throughput(FakeBenchmark(), FakeGenai(), FakeCpu(mem_gb), cfg, runs, spec)
    except (_Recording, pytest.skip.Exception):
        pass
    return launched


def _bracketed_configs():
    """Each comparison's config and the job ids its test launches after its own first job: the interleaved
    launches of both sides (tiny's plan: run, base, base, run)."""
    import dataclasses

    from pytest_genai.train.config import benchmark_matrix
    from pytest_genai.train.launches import launch_plan

    configs = [c for c in benchmark_matrix("tiny", ("full",)) if c.sharded or c.attention == "fused"]
    order = launch_plan("tiny").order()[1:]
    out = []
    for c in configs:
        base = dataclasses.replace(c, strategy="ddp") if c.sharded else dataclasses.replace(c, attention="unfused")
        out.append((c, [c.id if side == "run" else base.id for side in order]))
    return out


@pytest.mark.parametrize("cfg, brackets", _bracketed_configs(), ids=lambda v: getattr(v, "id", ""))
def test_finetune_nodes_launch_the_same_jobs_in_the_same_order(monkeypatch, tmp_path, cfg, brackets):
    """A comparison launches both sides several times, interleaved: node 1 launches them too, in the same order (else
    node 0's next job waits for a node that has moved on, and every later job pairs the wrong collectives)."""
    pytest.importorskip("torch")
    from pytest_genai.train.requirements import MissingRequirement, check_requirements

    try:
        check_requirements(cfg, "cpu")
    except MissingRequirement as exc:
        pytest.skip(str(exc))
    node0 = _finetune_launches(monkeypatch, tmp_path, cfg, 0)
    node1 = _finetune_launches(monkeypatch, tmp_path, cfg, 1)
    assert node0 == [cfg.id, *brackets]
    assert node1 == node0


# -- B1 Level 1 at full scale on 80/96 GB cards ----------------------------------------------------------------------
@pytest.mark.parametrize("generation", ["h100-sxm", "gaudi2"])
@pytest.mark.parametrize("cfg_id", ["L32-h12288-a192-s1024-b8-bf16-forward-sdpa", "L16-h8192-a128-s1024-b8-bf16-train-sdpa"])
def test_level1_full_configs_over_the_card_skip_before_building(generation, cfg_id):
    from pytest_genai.dabench.config import default_sweep
    from pytest_genai.devices.specs import get_spec

    bench = _benchmark_module("test_dabench_level1")
    spec = get_spec(generation)
    (cfg,) = [c for c in default_sweep(spec.kind, "full") if c.id == cfg_id]

    def built(*args):
        pytest.fail(f"{cfg_id} was measured on a {spec.mem_capacity_gb:.0f} GB card its modeled peak exceeds")

    with pytest.raises(pytest.skip.Exception, match=r"does not fit: \d+\.\d GiB modeled peak"):
        bench._level1(FakeBenchmark(), FakeGenai(), FakeDevice(spec.kind, spec), cfg, built)


# -- a device held by the pytest process ------------------------------------------------------------------------------
class _Item:
    def __init__(self, nodeid, *marks):
        self.nodeid, self._marks = nodeid, marks

    def get_closest_marker(self, name):
        return object() if name in self._marks else None


def test_tests_that_launch_jobs_run_before_the_in_process_device_tests():
    """After an in-process Gaudi row the pytest process holds its card: every later torchrun job's rank 0 would
    fail to acquire it. So every launching test on a Gaudi or GPU runs first, each group in its collected order;
    skipped and CPU items keep their places."""
    conftest = _benchmark_module("conftest")
    items = [_Item("level1[hpu]", "hpu"), _Item("finetune[hpu]", "launches", "hpu"), _Item("diffusion[hpu]", "hpu"),
             _Item("ddp[cpu]", "launches", "cpu"), _Item("ddp[hpu]", "launches", "hpu"),
             _Item("ddp[cuda]", "launches", "cuda", "skip"), _Item("level1[cpu]", "cpu")]
    ordered = [i.nodeid for i in conftest.launching_first(items)]
    assert ordered == ["finetune[hpu]", "ddp[hpu]", "level1[hpu]", "diffusion[hpu]", "ddp[cpu]", "ddp[cuda]",
                       "level1[cpu]"]
    conftest.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == ordered


@pytest.mark.parametrize("module, test", [("test_finetune", "test_finetune_throughput"),
                                          ("test_finetune", "test_finetune_wikitext"),
                                          ("test_finetune", "test_launcher_vs_bare_cpu"),
                                          ("test_dabench_level2", "test_parallel_scaling"),
                                          ("test_diffusion", "test_diffusion_ddp_scaling")])
def test_every_test_that_launches_jobs_is_marked(module, test):
    bench = _benchmark_module(module)
    marks = [m.name for m in getattr(getattr(bench, test), "pytestmark", [])] + \
        [m.name for m in getattr(bench, "pytestmark", [])]
    assert "launches" in marks


@pytest.mark.parametrize("cfg, brackets", _bracketed_configs(), ids=lambda v: getattr(v, "id", ""))
def test_finetune_nodes_with_different_memory_launch_the_same_jobs_and_agree_in_them(monkeypatch, tmp_path, cfg,
                                                                                     brackets):
    """Node 1 reads far less RAM than node 0: it still launches what node 0 launches (a node that skipped alone
    would leave node 0's job waiting for it), and its jobs carry why it cannot hold them; the ranks then agree."""
    pytest.importorskip("torch")
    from pytest_genai.train.requirements import MissingRequirement, check_requirements

    try:
        check_requirements(cfg, "cpu")
    except MissingRequirement as exc:
        pytest.skip(str(exc))
    node0_problems, node1_problems = [], []
    node0 = _finetune_launches(monkeypatch, tmp_path, cfg, 0, mem_gb=64.0, problems=node0_problems)
    node1 = _finetune_launches(monkeypatch, tmp_path, cfg, 1, mem_gb=0.001, problems=node1_problems)
    assert node1 == node0 == [cfg.id, *brackets]
    assert node0_problems == [None] * len(node0)
    assert all(p and p.startswith("planner: ") for p in node1_problems)


def test_the_ranks_agree_on_every_nodes_problem():
    from pytest_genai.train.worker import agreed_problem

    def gather_of(per_rank):
        def gather(out, mine):
            out[:] = per_rank
        return gather

    env = {"world_size": 4, "rank": 0, "group_rank": 0}
    ok = [(0, None), (0, None), (1, None), (1, None)]
    assert agreed_problem(None, env, gather_of(ok)) is None
    short = [(0, None), (0, None), (1, "64 GiB > 2 GiB usable"), (1, "64 GiB > 2 GiB usable")]
    assert agreed_problem(None, env, gather_of(short)) == "node 1: 64 GiB > 2 GiB usable"


def test_a_job_the_nodes_agreed_not_to_run_is_a_skipped_run(monkeypatch, tmp_path):
    from pytest_genai.runtime.launcher import LaunchSpec
    from pytest_genai.train import run
    from pytest_genai.train.config import benchmark_matrix

    cfg = benchmark_matrix("tiny", ("full",))[0]
    seen = {}

    def fake_launch(worker, spec, work, env=None, warm=False):
        import json
        import types

        seen.update(json.loads(open(worker[-1], encoding="utf-8").read()))
        return types.SimpleNamespace(result={"schema": "x", "skipped": "node 1: too little RAM"}, wall_s=1.0)

    monkeypatch.setattr(run, "launch", fake_launch)
    monkeypatch.setattr(run, "check_requirements", lambda cfg, kind: None)
    spec = LaunchSpec(nproc=1, nnodes=2, rdzv_endpoint="127.0.0.1:29500", node_rank=0)
    out = run.run(cfg, "cpu", spec, tmp_path, node_problem=None)
    assert out == run.SkippedRun("node 1: too little RAM")
    assert "node_problem" in seen  # several nodes: the ranks agree


@pytest.mark.slow
def test_two_nodes_agree_not_to_run_when_one_lacks_memory(tmp_path):
    """The real worker on two launches playing two nodes (gloo on 127.0.0.1): node 1 says its memory cannot hold the
    run; both nodes' ranks stop before building anything, node 0 gets a SkippedRun naming node 1, node 1 None."""
    pytest.importorskip("torch")
    import socket
    from concurrent.futures import ThreadPoolExecutor

    from pytest_genai.runtime.launcher import LaunchSpec
    from pytest_genai.train import run
    from pytest_genai.train.config import benchmark_matrix

    cfg = next(c for c in benchmark_matrix("tiny", ("full",)) if c.strategy == "ddp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    specs = [LaunchSpec(nproc=1, nnodes=2, rdzv_endpoint=f"127.0.0.1:{port}", node_rank=n, rdzv_id="agree",
                        timeout_s=120) for n in (0, 1)]
    problems = (None, "planner: 1.0 GiB > 0.1 GiB usable")
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda n: run.run(cfg, "cpu", specs[n], tmp_path / f"node{n}",
                                               node_problem=problems[n]), (0, 1)))
    assert done[0] == run.SkippedRun("node 1: planner: 1.0 GiB > 0.1 GiB usable")
    assert done[1] is None
