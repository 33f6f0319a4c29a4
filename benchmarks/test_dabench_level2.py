"""Paper B, B2 — DABench-LLM Level 2: inter-chip scaling (DP / TP / PP) and deployment (batch size, precision).

Scaling: the Level 1 decoder stack trains on ``--genai-nproc`` ranks launched with torchrun (gloo on the CPU, one
core per rank; NCCL on CUDA) and on one rank; the ratio of their samples/s is ``scaling_throughput_ratio``. The
pipeline run compares the optimal partition of measured per-layer loads with the equal-layer-count split (the
paper's IPU finding: the most loaded stage sets the throughput). Deployment: samples/s against batch size (and the
batch where gains plateau) and mixed / low precision against fp32, in-process on one device.

The torch runs check physics claims (claims/data/paper_b.toml, basis = "physics"). Paper B's own B2 numbers on the
dataflow chips -- RDU tensor parallel 2 -> 4 chips, mixed-precision gains on RDU / IPU / WSE -- come from the
vendors' model-zoo runs, read from their run logs under ``--genai-dabench-profiles DIR/<kind>/level2/<run>/``
(``test_vendor_*``; pytest_genai.dabench.level2.artifacts): where the runs exist they are checked, where not the
test skips naming the files to provide and the vendor commands that produce them.
"""
import dataclasses

import pytest

from pytest_genai.dabench.level2 import config as scaling_config
from pytest_genai.dabench.level2.config import STRATEGIES, ParallelConfig, PrecisionConfig

pytestmark = pytest.mark.dabench

EXPERIMENT = "dabench_level2"
MODEL = "decoder-block-stack"
#: The physics claim each run checks (claims/data/paper_b.toml).
CHECKS = {
    "dp": ("B2.cpu_dp_weak_scaling",),
    "tp": ("B2.cpu_tp_communication_bound",),
    "pp": ("B2.cpu_pipeline_optimal_partition",),
    "batch": ("B2.batch_size_gain",),
    "amp_bf16": ("B2.amp_bf16_really_reduced",),
}


VENDOR_KINDS = ("wse", "rdu", "ipu")


def _torch_device_or_skip(device, kinds=("cpu", "cuda", "hpu")):
    if device.kind not in kinds:
        pytest.skip(f"this Level 2 benchmark runs through torch on {', '.join(kinds)}; on {device.kind} Level 2 is "
                    "read from the vendor's run logs by test_vendor_precision / test_vendor_tp_scaling")


def _vendor_runs(request, kind):
    """The Level-2 runs of ``kind`` under --genai-dabench-profiles, or a skip naming the files and commands."""
    from pytest_genai.dabench.level2.artifacts import HOWTO, ArtifactsMissing, read_runs
    from pytest_genai.options import resolve

    root = resolve(request.config, "dabench_profiles")
    if not root:
        pytest.skip(f"{kind} Level 2 is read from run logs: --genai-dabench-profiles DIR with "
                    f"DIR/{kind}/level2/<run>/ folders from {HOWTO[kind]} (docs/dabench_level2.md)")
    try:
        return read_runs(root, kind)
    except ArtifactsMissing as exc:
        pytest.skip(str(exc))


def _record_comparison(genai, device, comparison, metric: str, config: dict) -> None:
    run, base = comparison.run, comparison.baseline
    genai.start(experiment=EXPERIMENT, device=device, config={**config, "layers": run.layers}, model="vendor-gpt2")
    rounds = list(comparison.rounds) if len(comparison.rounds) >= 2 else None
    genai.metric(metric, comparison.value, rounds=rounds)
    genai.metric("samples_per_s", run.samples_per_s)
    genai.metric("baseline_samples_per_s", base.samples_per_s)
    genai.label("runs", ", ".join(r.name for r in comparison.runs))
    genai.label("baseline_runs", ", ".join(r.name for r in comparison.baselines))
    genai.label("throughput_source", run.throughput_basis)
    genai.attach("vendor_runs", [dataclasses.asdict(r) for r in (*comparison.runs, *comparison.baselines)])


@pytest.mark.claims("B2.rdu_mixed_precision", "B2.ipu_mixed_precision", "B2.wse2_mixed_precision",
                    kinds=VENDOR_KINDS)
def test_vendor_precision(request, benchmark, genai, genai_device):
    """Mixed precision over the vendor's baseline precision (fp32 on RDU / IPU; fp16 on the WSE, where fp32
    training is not possible), same chips and layers, from the vendors' run logs."""
    if genai_device.kind not in VENDOR_KINDS:
        pytest.skip(f"on {genai_device.kind} mixed precision is timed by test_precision")
    from pytest_genai.dabench.level2.artifacts import MIXED_PRECISION_BASELINE, ArtifactsMissing, mixed_precision_speedup

    kind = genai_device.kind
    runs = _vendor_runs(request, kind)
    try:
        comparison = benchmark.pedantic(mixed_precision_speedup, args=(runs, kind), rounds=1, iterations=1)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc} under DIR/{kind}/level2/ (docs/dabench_level2.md)")
    baseline, why = MIXED_PRECISION_BASELINE[kind]
    _record_comparison(genai, genai_device, comparison, "mixed_precision_speedup",
                       {"precision": "mixed", "baseline_precision": baseline, "chips": comparison.run.chips})
    genai.label("mixed_precision_baseline", why)
    genai.check({"rdu": "B2.rdu_mixed_precision", "ipu": "B2.ipu_mixed_precision",
                 "wse": "B2.wse2_mixed_precision"}[kind])


@pytest.mark.claims("B2.rdu_tp_2_to_4_chips", kinds=("rdu",))
def test_vendor_tp_scaling(request, benchmark, genai, rdu):
    """RDU tensor parallel: samples/s on 4 chips over 2 chips, same precision and layers, from SambaFlow run logs."""
    from pytest_genai.dabench.level2.artifacts import ArtifactsMissing, tp_scaling_ratio

    runs = _vendor_runs(request, "rdu")
    try:
        comparison = benchmark.pedantic(tp_scaling_ratio, args=(runs,), rounds=1, iterations=1)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc} under DIR/rdu/level2/ (docs/dabench_level2.md)")
    _record_comparison(genai, rdu, comparison, "scaling_throughput_ratio",
                       {"strategy": "tp", "chips": comparison.run.chips, "baseline_chips": comparison.baseline.chips,
                        "precision": comparison.run.precision})
    genai.metric("world_size", comparison.run.chips, source="config")
    genai.check("B2.rdu_tp_2_to_4_chips")


@pytest.fixture
def pinned_threads(genai_device):
    """One CPU thread (as each rank of the scaling runs has one core), restored afterwards."""
    if genai_device.kind != "cpu":
        yield
        return
    from pytest_genai.runtime.threads import torch_threads

    with torch_threads(1):
        yield


@pytest.mark.claims(*CHECKS["dp"], *CHECKS["tp"], *CHECKS["pp"], kinds=("cpu", "cuda"))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_parallel_scaling(benchmark, genai, genai_device, genai_settings, strategy, tmp_path):
    _torch_device_or_skip(genai_device, ("cpu", "cuda"))
    from pytest_genai.dabench.level2.run import pipeline_step_s_modeled, run_parallel, summarize

    scale, nnodes = genai_settings["scale"], genai_settings["nnodes"]
    world = genai_settings["nproc"] * nnodes
    if world < 2:
        pytest.skip("scaling needs at least 2 ranks: --genai-nproc 2 (or more)")
    from pytest_genai.devices.ranks import ranks_problem

    if why := ranks_problem(genai_device.kind, genai_settings["nproc"]):  # per node: one rank per core / GPU
        pytest.skip(why)
    workload = scaling_config.parallel_workload(genai_device.kind, scale)
    head = scaling_config.pipeline_head_vocab(genai_device.kind, scale) if strategy == "pp" else 0
    # 10 interleaved rounds: the timing claims are judged on the 95% interval of the per-round values.
    cfg = ParallelConfig(strategy, workload, world_size=world, head_vocab=head, repeats=10)
    genai.start(experiment=EXPERIMENT, device=genai_device, config=cfg, model=MODEL)
    result = benchmark.pedantic(
        run_parallel, args=([cfg], tmp_path),
        kwargs=dict(device_kind=genai_device.kind, timeout_s=genai_settings["timeout"], nnodes=nnodes,
                    rdzv_endpoint=genai_settings["rdzv_endpoint"]),
        rounds=1, iterations=1,
    )
    s = summarize(result["results"][0], cfg)
    genai.metric("world_size", s.world_size)
    genai.metric("samples_per_s", s.samples_per_s)
    genai.metric("baseline_samples_per_s", s.baseline_samples_per_s)
    genai.metric("step_time_s", s.step_s)
    genai.metric("baseline_step_time_s", s.baseline_step_s)
    ratios = s.scaling_ratio_rounds  # per interleaved round: N ranks vs the one-rank step of that round
    genai.metric("scaling_throughput_ratio", s.scaling_throughput_ratio, rounds=ratios)
    genai.metric("scaling_efficiency", s.scaling_efficiency, rounds=[r / s.world_size for r in ratios])
    genai.metric("comm_time_share", s.comm_time_share, rounds=s.comm_share_rounds or None)
    genai.label("strategy", strategy)
    genai.label("comm_time_share_method", s.comm_method)
    genai.label("scaling_baseline", "1 rank, same workload; dp: one rank's batch (weak scaling), tp/pp: whole batch")
    genai.attach("load_context", s.load_context)
    if strategy == "pp":
        import statistics

        from pytest_genai.dabench.level2.run import partition_ratio_rounds

        optimal, naive = s.partitions["optimal"], s.partitions["naive"]
        # Judged on stages timed alone (a chip each); in the pipeline, co-running CPU stages share caches.
        ratios = partition_ratio_rounds(optimal, naive)
        genai.metric("max_stage_compute_s", statistics.median(optimal.max_stage_alone_rounds))
        genai.metric("naive_max_stage_compute_s", statistics.median(naive.max_stage_alone_rounds))
        genai.metric("partition_max_stage_ratio", statistics.median(ratios), rounds=ratios)
        genai.metric("max_stage_compute_in_pipeline_s", optimal.max_stage_compute_s)
        genai.metric("naive_max_stage_compute_in_pipeline_s", naive.max_stage_compute_s)
        genai.metric("partition_max_stage_ratio_in_pipeline", optimal.max_stage_compute_s / naive.max_stage_compute_s)
        genai.metric("partition_throughput_ratio", optimal.samples_per_s / naive.samples_per_s)
        genai.metric("load_imbalance", optimal.stage_load_imbalance)
        genai.metric("naive_load_imbalance", naive.stage_load_imbalance)
        genai.label("load_imbalance_subtasks", "pipeline stages: median measured compute per step in the pipeline, mean/max")
        genai.label("max_stage_compute_method", "each stage's step work (forwards, backwards, optimizer) timed alone "
                    "on rank 0, interleaved rounds; *_in_pipeline_s: the same work timed while the stages co-run")
        genai.metric("partition_max_stage_ratio_modeled",
                     optimal.partition.max_stage_load / naive.partition.max_stage_load, source="modeled")
        genai.metric("pipeline_step_time_s_modeled", pipeline_step_s_modeled(optimal, cfg.micro_batches),
                     source="modeled")
        from pytest_genai.dabench.level2.partition import bubble_fraction_modeled

        genai.metric("pipeline_bubble_fraction_modeled", bubble_fraction_modeled(world, cfg.micro_batches),
                     source="modeled")
        genai.label("partition_optimal", optimal.partition.id)
        genai.label("partition_naive", naive.partition.id)
        genai.attach("layer_loads_s", list(s.layer_loads_s))
        # The partitioner's contract on the loads it was given (exact, whatever the machine does).
        assert optimal.partition.max_stage_load <= naive.partition.max_stage_load
    genai.check(*CHECKS[strategy])


@pytest.mark.claims(*CHECKS["batch"], kinds=("cpu", "cuda", "hpu"))
def test_batch_size_sweep(benchmark, genai, genai_device, genai_settings, pinned_threads):
    _torch_device_or_skip(genai_device)
    from pytest_genai.dabench.level2.deploy import batch_sweep

    cfg = scaling_config.batch_sweep_config(genai_device.kind, genai_settings["scale"])
    genai.start(experiment=EXPERIMENT, device=genai_device, config=cfg, model=MODEL)
    result = benchmark.pedantic(batch_sweep, args=(cfg, genai_device), rounds=1, iterations=1)
    best = max(range(len(result.batches)), key=lambda i: result.samples_per_s[i])
    genai.metric("samples_per_s", result.samples_per_s[best])
    genai.metric("best_batch", result.batches[best])
    gains = result.throughput_gain_rounds
    genai.metric("batch_throughput_gain", result.throughput_gain, rounds=gains)
    plateau = result.plateau_batch
    if plateau is not None:
        genai.metric("plateau_batch", plateau)
    genai.label("plateau", f"gains below {cfg.min_gain:.0%} after batch {plateau}" if plateau is not None
                else f"still gaining more than {cfg.min_gain:.0%} at the largest batch {cfg.batches[-1]}")
    genai.attach("batch_curve", [
        {"batch": b, "step_time_s": t, "samples_per_s": sps, "batch_scaling_efficiency": eff}
        for b, t, sps, eff in zip(result.batches, result.step_s, result.samples_per_s,
                                  result.batch_scaling_efficiency)
    ])
    genai.check(*CHECKS["batch"])


@pytest.mark.claims(*CHECKS["amp_bf16"], kinds=("cpu", "cuda", "hpu"))
@pytest.mark.parametrize("precision", ["amp_bf16", "amp_fp16", "bf16"])
def test_precision(benchmark, genai, genai_device, genai_settings, precision, pinned_threads):
    _torch_device_or_skip(genai_device)
    if precision not in scaling_config.precisions(genai_device.kind):
        pytest.skip(f"{precision} is not swept on {genai_device.kind} (no fast kernels for it there)")
    from pytest_genai.dabench.level2.deploy import precision_sweep

    cfg = PrecisionConfig(scaling_config.precision_workload(genai_device.kind, genai_settings["scale"]), precision)
    genai.start(experiment=EXPERIMENT, device=genai_device, config=cfg, model=MODEL)
    result = benchmark.pedantic(precision_sweep, args=(cfg, genai_device), rounds=1, iterations=1)
    batch = cfg.workload.batch
    genai.metric("samples_per_s", batch / result.step_s)
    genai.metric("fp32_samples_per_s", batch / result.fp32_step_s)
    genai.metric("step_time_s", result.step_s)
    genai.metric("precision_output_rel_error", result.output_rel_error)
    if genai_device.kind == "cuda":
        import torch

        genai.label("fp32_matmul_precision", torch.get_float32_matmul_precision())  # 'highest' = no TF32
    if cfg.is_mixed:
        genai.metric("mixed_precision_speedup", result.speedup, rounds=result.speedup_rounds)
    else:
        genai.metric("low_precision_speedup", result.speedup, rounds=result.speedup_rounds)
    if precision in CHECKS:
        genai.check(*CHECKS[precision])
    # The low precision was really used: its output differs from fp32 by rounding of a 8-11 bit mantissa,
    # not by 0 (autocast silently off) and not by O(1) (a broken cast).
    assert 1e-5 < result.output_rel_error < 0.1, f"output differs from fp32 by {result.output_rel_error:.3g}"

