"""Paper A, A3: super-resolution diffusion-model training throughput per device, and its DDP scaling.

The paper's generation-to-generation speedups (V100→A100→H100 ≈ 2x each, Gaudi→Gaudi2 4x, Gaudi2→Gaudi3 stalls)
compare two runs: save each device's run with --benchmark-json and check them with
`pytest-genai gate old.json new.json` (claims A3.gen.*). The single-device test records throughput and asserts the
training is real (the loss falls). The DDP test trains on ``--genai-nproc`` ranks (torchrun; gloo with one core
per CPU rank, NCCL with one GPU per CUDA rank, HCCL with one Gaudi per HPU rank in lazy mode) after a one-rank
baseline in the same job, and checks the scaling claims where one exists: the paper gives no DDP number for Gaudi,
so on hpu the scaling is recorded without a claim. Images are synthetic dust-like fields (see
pytest_genai.diffusion.data).
"""
import contextlib
import dataclasses

import pytest

from pytest_genai.diffusion import DiffusionConfig, train_steps
from pytest_genai.diffusion.results import row_config, run_peak_tflops, scaling_result, throughput_result

pytestmark = [pytest.mark.diffusion, pytest.mark.slow]

SMALL = DiffusionConfig()  # fits 2 CPU cores in seconds
ACCEL = DiffusionConfig(image_size=128, base_width=64, batch_size=32, steps=20, warmup_steps=5)
SIZE_BY_KIND = {"cpu": SMALL, "cuda": ACCEL, "hpu": ACCEL}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_diffusion_training_throughput(benchmark, genai, genai_device, dtype):
    base = SIZE_BY_KIND.get(genai_device.kind)
    if base is None:
        pytest.skip(f"the diffusion workload runs through torch devices; {genai_device.kind} has no torch device")
    from pytest_genai.runtime.threads import torch_threads

    cfg = dataclasses.replace(base, dtype=dtype)
    cpu = genai_device.kind == "cpu"
    hpu_mode = None
    if genai_device.kind == "hpu":  # in this process: whatever mode the bridge started in
        from pytest_genai.runtime.hpu_mode import running_mode

        hpu_mode = running_mode()
    # experiment and device: this file's and genai_device
    genai.start(config=row_config(cfg, genai_device.kind, hpu_mode, id=cfg.id), model="sr-unet-synthetic-dust")
    genai_device.reset_peak_memory()
    # one thread on the CPU (2 shared cores make multi-threaded timings noisy), and the session's number after
    with torch_threads(1) if cpu else contextlib.nullcontext():
        result = benchmark.pedantic(train_steps, args=(cfg, genai_device), rounds=1, iterations=1)
    spec = genai_device.spec
    peak = run_peak_tflops(spec.peak_tflops(cfg.dtype) if spec else None, genai_device.kind,
                           spec.threads if spec else None, threads=1)  # the CPU run had one thread
    genai.record(throughput_result(result, peak, genai_device.peak_memory_bytes()))
    # The training is real: the noise-prediction loss falls over the run.
    assert sum(result.losses[-3:]) / 3 < 0.8 * result.losses[0], f"loss did not fall: {result.losses}"


@pytest.mark.launches
@pytest.mark.claims("A3.cpu_ddp_weak_scaling", "A3.cuda_ddp_scaling_efficiency", kinds=("cpu", "cuda"))
def test_diffusion_ddp_scaling(benchmark, genai, genai_device, genai_settings, tmp_path):
    from pytest_genai.diffusion.ddp import run_ddp, summarize
    from pytest_genai.diffusion.worker import DDP_KINDS

    kind = genai_device.kind
    if kind not in DDP_KINDS:
        pytest.skip(f"the DDP run uses torch.distributed with gloo (cpu), NCCL (cuda) or HCCL (hpu); {kind} has none")
    world = genai_settings["nproc"]
    if world < 2:
        pytest.skip("DDP scaling needs at least 2 ranks: --genai-nproc 2 (or more)")
    from pytest_genai.devices.ranks import ranks_problem

    if why := ranks_problem(kind, world):  # one rank per core / GPU
        pytest.skip(why)
    cfg = SIZE_BY_KIND[kind]
    from pytest_genai.diffusion.ddp import HPU_MODE

    # the ranks refuse to train in another mode than the one asked for (runtime.hpu_mode.require_mode)
    genai.start(model="sr-unet-synthetic-dust",
                config=row_config(cfg, kind, HPU_MODE if kind == "hpu" else None, strategy="ddp", world_size=world))
    result = benchmark.pedantic(run_ddp, args=(cfg, world, tmp_path),
                                kwargs=dict(device_kind=kind, timeout_s=genai_settings["timeout"]),
                                rounds=1, iterations=1)
    s = summarize(result)
    assert s.hpu_mode == (HPU_MODE if kind == "hpu" else None), f"the ranks ran in {s.hpu_mode} mode"
    genai.record(scaling_result(s))
    if kind != "hpu":  # paper_a.toml has no DDP claim for Gaudi (A3.gen.gaudi2_gaudi3 is a generation speedup)
        genai.check("A3.cpu_ddp_weak_scaling", "A3.cuda_ddp_scaling_efficiency")
    # DDP training is real: rank 0's loss falls while the gradients are averaged over the ranks.
    assert sum(s.losses[-3:]) / 3 < 0.8 * s.losses[0], f"loss did not fall under DDP: {s.losses}"
