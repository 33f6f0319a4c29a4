"""Paper B, B2 — DABench-LLM Level 2: inter-chip scaling (DP / TP / PP) and deployment (batch size, precision).

Scaling: the Level 1 decoder stack trains on ``--genai-nproc`` ranks launched with torchrun (gloo on the CPU, one
core per rank; NCCL on CUDA) and on one rank; the ratio of their samples/s is ``scaling_throughput_ratio``. The
pipeline run compares the optimal partition of measured per-layer loads with the equal-layer-count split (the
paper's IPU finding: the most loaded stage sets the throughput). Deployment: samples/s against batch size (and the
batch where gains plateau) and mixed / low precision against fp32, in-process on one device.

The torch runs check physics claims (claims/data/paper_b.toml, basis = "physics"). Paper B's own B2 numbers on the
dataflow chips -- RDU tensor parallel 2 -> 4 chips, mixed-precision gains on RDU / IPU / WSE, batch-size gains
(near-linear on RDU / IPU, a plateau after batch 200 on the WSE) -- come from the
vendors' model-zoo runs, read from their run logs under ``--genai-dabench-profiles DIR/<kind>/level2/<run>/``
(``test_vendor_*``; pytest_genai.dabench.level2.artifacts): where the runs exist they are checked, where not the
test skips naming the files to provide and the vendor commands that produce them.
"""
import pytest

from pytest_genai.dabench.level2 import config as scaling_config
from pytest_genai.dabench.level2.config import STRATEGIES, PrecisionConfig

pytestmark = [pytest.mark.dabench, pytest.mark.slow]

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
VENDOR_MODEL = "vendor-gpt2"


def _accelerator_memory_bytes(device) -> int | None:
    """The card's memory, for fitting the sweeps to it (None on the CPU: its sweeps are small)."""
    if device.kind == "cpu":
        return None
    if device.kind == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(device.index).total_memory)
    if device.spec is not None and device.spec.mem_capacity_gb:
        return int(device.spec.mem_capacity_gb * 1e9)
    return None


def _torch_device_or_skip(device, kinds=("cpu", "cuda", "hpu")):
    if device.kind in kinds:
        return
    if device.kind in VENDOR_KINDS:
        pytest.skip(f"this Level 2 benchmark runs through torch on {', '.join(kinds)}; on {device.kind} Level 2 is "
                    "read from the vendor's run logs by test_vendor_precision / test_vendor_tp_scaling / "
                    "test_vendor_batch_scaling")
    # Gaudi runs torch, but has no vendor logs: say what runs there instead
    pytest.skip(f"this Level 2 benchmark runs on {', '.join(kinds)} only: its torchrun jobs (gloo and NCCL ranks) "
                f"have no {device.kind} path; on {device.kind} Level 2 is test_batch_size_sweep and test_precision")


def _vendor_runs(request, kind, howto=None):
    """The Level-2 runs of ``kind`` under --genai-dabench-profiles, or a skip naming the files and commands
    (``howto``: what to run when it is not the precision / TP runs of ``artifacts.HOWTO``)."""
    from pytest_genai.dabench.level2.artifacts import HOWTO, ArtifactsMissing, read_runs
    from pytest_genai.plugin.options import resolve

    root = resolve(request.config, "dabench_profiles")
    if not root:
        pytest.skip(f"{kind} Level 2 is read from run logs: --genai-dabench-profiles DIR with "
                    f"DIR/{kind}/level2/<run>/ folders from {howto or HOWTO[kind]} (docs/dabench_level2.md)")
    try:
        return read_runs(root, kind)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc}; for this test: {howto}" if howto else str(exc))


@pytest.mark.claims("B2.rdu_mixed_precision", "B2.ipu_mixed_precision", "B2.wse2_mixed_precision",
                    kinds=VENDOR_KINDS)
def test_vendor_precision(request, benchmark, genai, genai_device):
    """Mixed precision over the vendor's baseline precision (fp32 on RDU / IPU; fp16 on the WSE, where fp32
    training is not possible), same chips and layers, from the vendors' run logs."""
    if genai_device.kind not in VENDOR_KINDS:
        pytest.skip(f"on {genai_device.kind} mixed precision is timed by test_precision")
    from pytest_genai.dabench.level2.artifacts import MIXED_PRECISION_BASELINE, ArtifactsMissing, mixed_precision_speedup
    from pytest_genai.dabench.level2.results import vendor_precision_result

    kind = genai_device.kind
    runs = _vendor_runs(request, kind)
    try:
        comparison = benchmark.pedantic(mixed_precision_speedup, args=(runs, kind), rounds=1, iterations=1)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc} under DIR/{kind}/level2/ (docs/dabench_level2.md)")
    genai.start(config={"precision": "mixed", "baseline_precision": MIXED_PRECISION_BASELINE[kind][0],
                        "chips": comparison.run.chips, "layers": comparison.run.layers}, model=VENDOR_MODEL,
                measured_here=False)
    genai.record(vendor_precision_result(comparison, kind))
    genai.check({"rdu": "B2.rdu_mixed_precision", "ipu": "B2.ipu_mixed_precision",
                 "wse": "B2.wse2_mixed_precision"}[kind])


@pytest.mark.claims("B2.rdu_tp_2_to_4_chips", kinds=("rdu",))
def test_vendor_tp_scaling(request, benchmark, genai, rdu):
    """RDU tensor parallel: samples/s on 4 chips over 2 chips, same precision and layers, from SambaFlow run logs."""
    from pytest_genai.dabench.level2.artifacts import ArtifactsMissing, tp_scaling_ratio
    from pytest_genai.dabench.level2.results import vendor_tp_result

    runs = _vendor_runs(request, "rdu")
    try:
        comparison = benchmark.pedantic(tp_scaling_ratio, args=(runs,), rounds=1, iterations=1)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc} under DIR/rdu/level2/ (docs/dabench_level2.md)")
    run = comparison.run
    genai.start(device=rdu, config={"strategy": "tp", "chips": run.chips, "baseline_chips": comparison.baseline.chips,
                                    "precision": run.precision, "layers": run.layers}, model=VENDOR_MODEL,
                measured_here=False)
    genai.record(vendor_tp_result(comparison))
    genai.check("B2.rdu_tp_2_to_4_chips")


BATCH_CLAIMS = {"rdu": ("B2.rdu_batch_near_linear", "batch_scaling_efficiency"),
                "ipu": ("B2.ipu_batch_near_linear", "batch_scaling_efficiency"),
                "wse": ("B2.wse2_batch_plateau", "batch_gain_per_doubling_from_200")}


@pytest.mark.claims(*(claim for claim, _ in BATCH_CLAIMS.values()), kinds=VENDOR_KINDS)
def test_vendor_batch_scaling(request, benchmark, genai, genai_device):
    """samples/s against batch size from the vendors' run logs at several batches (same precision, chips, layers):
    near-linear gains on RDU and IPU, a plateau after batch 200 on the WSE."""
    if genai_device.kind not in VENDOR_KINDS:
        pytest.skip(f"on {genai_device.kind} the batch sweep is timed by test_batch_size_sweep")
    from pytest_genai.dabench.level2.artifacts import BATCH_HOWTO, ArtifactsMissing, batch_sweep
    from pytest_genai.dabench.level2.results import vendor_batch_result

    kind = genai_device.kind
    runs = _vendor_runs(request, kind, BATCH_HOWTO[kind])
    claim, metric = BATCH_CLAIMS[kind]
    try:
        sweep = benchmark.pedantic(batch_sweep, args=(runs,), rounds=1, iterations=1)
    except ArtifactsMissing as exc:
        pytest.skip(f"{exc} under DIR/{kind}/level2/: {BATCH_HOWTO[kind]} (docs/dabench_level2.md)")
    result = vendor_batch_result(sweep)
    if metric not in result.metrics:
        pytest.skip(f"{claim} needs runs at two or more batch sizes >= 200 under DIR/{kind}/level2/ (swept: "
                    f"{list(sweep.batches)}): {BATCH_HOWTO[kind]} (docs/dabench_level2.md)")
    run = sweep.runs[0]
    genai.start(config={"sweep": "batch", "batches": ", ".join(map(str, sweep.batches)), "precision": run.precision,
                        "chips": run.chips, "layers": run.layers}, model=VENDOR_MODEL, measured_here=False)
    genai.record(result)
    genai.check(claim)


@pytest.fixture
def pinned_threads(genai_device):
    """One CPU thread (as each rank of the scaling runs has one core), restored afterwards."""
    if genai_device.kind != "cpu":
        yield
        return
    from pytest_genai.runtime.threads import torch_threads

    with torch_threads(1):
        yield


@pytest.mark.launches
@pytest.mark.claims(*CHECKS["dp"], *CHECKS["tp"], *CHECKS["pp"], kinds=("cpu", "cuda"))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_parallel_scaling(benchmark, genai, genai_device, genai_settings, strategy, tmp_path):
    _torch_device_or_skip(genai_device, ("cpu", "cuda"))
    from pytest_genai.dabench.level2.results import parallel_result
    from pytest_genai.dabench.level2.run import run_parallel, summarize

    scale, nnodes = genai_settings["scale"], genai_settings["nnodes"]
    world = genai_settings["nproc"] * nnodes
    # 10 interleaved rounds: the timing claims are judged on the 95% interval of the per-round values.
    cfg, why = scaling_config.scaling_run(strategy, genai_device.kind, scale, world, repeats=10)
    if cfg is None:
        pytest.skip(why)
    from pytest_genai.devices.ranks import ranks_problem

    if why := ranks_problem(genai_device.kind, genai_settings["nproc"]):  # per node: one rank per core / GPU
        pytest.skip(why)
    result = benchmark.pedantic(
        run_parallel, args=([cfg], tmp_path),
        kwargs=dict(device_kind=genai_device.kind, timeout_s=genai_settings["timeout"], nnodes=nnodes,
                    rdzv_endpoint=genai_settings["rdzv_endpoint"]),
        rounds=1, iterations=1,
    )
    if result is None:  # the other nodes take part in the job; rank 0, on node 0, returns the results
        pytest.skip(f"this node took part in the {nnodes}-node job of {cfg.id}; node 0 records it")
    genai.start(config=cfg, model=MODEL)
    s = summarize(result["results"][0], cfg)
    genai.record(parallel_result(s, cfg))
    if strategy == "pp":
        # The partitioner's contract on the loads it was given (exact, whatever the machine does).
        optimal, naive = s.partitions["optimal"], s.partitions["naive"]
        assert optimal.partition.max_stage_load <= naive.partition.max_stage_load
    genai.check(*CHECKS[strategy])


@pytest.mark.claims(*CHECKS["batch"], kinds=("cpu", "cuda", "hpu"))
def test_batch_size_sweep(benchmark, genai, genai_device, genai_settings, pinned_threads):
    _torch_device_or_skip(genai_device)
    from pytest_genai.dabench.level2.deploy import batch_sweep
    from pytest_genai.dabench.level2.results import batch_sweep_result

    cfg = scaling_config.batch_sweep_config(genai_device.kind, genai_settings["scale"])
    dropped = None
    capacity = _accelerator_memory_bytes(genai_device)
    if capacity is not None:
        try:
            cfg, dropped = scaling_config.fitting_batches(cfg, capacity)
        except ValueError as exc:
            pytest.skip(str(exc))
    genai.start(config=cfg, model=MODEL)
    result = benchmark.pedantic(batch_sweep, args=(cfg, genai_device), rounds=1, iterations=1)
    genai.record(batch_sweep_result(result, cfg))
    if dropped:
        genai.label("batches_left_out", dropped)
    genai.check(*CHECKS["batch"])


@pytest.mark.claims(*CHECKS["amp_bf16"], kinds=("cpu", "cuda", "hpu"))
@pytest.mark.parametrize("precision", ["amp_bf16", "amp_fp16", "bf16"])
def test_precision(benchmark, genai, genai_device, genai_settings, precision, pinned_threads):
    _torch_device_or_skip(genai_device)
    if precision not in scaling_config.precisions(genai_device.kind):
        pytest.skip(f"{precision} is not swept on {genai_device.kind} (no fast kernels for it there)")
    from pytest_genai.dabench.level2.deploy import precision_sweep
    from pytest_genai.dabench.level2.results import precision_result

    cfg = PrecisionConfig(scaling_config.precision_workload(genai_device.kind, genai_settings["scale"]), precision)
    capacity = _accelerator_memory_bytes(genai_device)
    too_big = capacity is not None and scaling_config.precision_fits(cfg, capacity)
    if too_big:
        pytest.skip(too_big)
    genai.start(config=cfg, model=MODEL)
    result = benchmark.pedantic(precision_sweep, args=(cfg, genai_device), rounds=1, iterations=1)
    matmul_precision = None
    if genai_device.kind == "cuda":
        import torch

        matmul_precision = torch.get_float32_matmul_precision()  # 'highest' = no TF32
    genai.record(precision_result(result, cfg, fp32_matmul_precision=matmul_precision))
    if precision in CHECKS:
        genai.check(*CHECKS[precision])
    # The low precision was really used: its output differs from fp32 by rounding of a 8-11 bit mantissa,
    # not by 0 (autocast silently off) and not by O(1) (a broken cast).
    assert 1e-5 < result.output_rel_error < 0.1, f"output differs from fp32 by {result.output_rel_error:.3g}"

