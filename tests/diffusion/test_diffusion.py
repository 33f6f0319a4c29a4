import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.diffusion import DiffusionConfig, degrade, dust_like_fields, power_law_field
from pytest_genai.diffusion.train import ddpm_alphas_cumprod

torch = pytest.importorskip("torch")


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="image_size 30 must be even and divisible by scale_factor 4"):
        DiffusionConfig(image_size=30)
    with pytest.raises(ValueError, match="DiffusionConfig.dtype 'fp8'"):
        DiffusionConfig(dtype="fp8")
    # step 0 runs under the FLOP counter, untimed: with no warm-up step `steps` would time one step fewer (none at 1)
    with pytest.raises(ValueError, match="DiffusionConfig.warmup_steps must be >= 1, got 0: the first step runs under"):
        DiffusionConfig(warmup_steps=0)
    assert DiffusionConfig().id == "sr32x4-w32-b8-fp32"


def test_power_law_fields_have_the_requested_slope():
    g = power_law_field(64, 64, beta=2.8, generator=torch.Generator().manual_seed(0))
    assert g.mean().abs() < 1e-4 and (g.std(dim=(-2, -1)) - 1).abs().max() < 1e-3
    power = (torch.fft.rfft2(g).abs() ** 2).mean(0)
    k = torch.sqrt(torch.fft.fftfreq(64)[:, None] ** 2 + torch.fft.rfftfreq(64)[None, :] ** 2)
    mask = (k > 0.05) & (k < 0.4)
    slope = torch.linalg.lstsq(torch.stack([k[mask].log(), torch.ones(int(mask.sum()))], 1),
                               power[mask].log()[:, None]).solution[0, 0]
    assert -3.2 < float(slope) < -2.4


@settings(max_examples=10, deadline=None)
@given(factor=st.sampled_from([2, 4]), size=st.sampled_from([8, 16]), a=st.floats(0.1, 10), b=st.floats(-5, 5))
def test_degrade_is_affine_and_keeps_constants(factor, size, a, b):
    hr = dust_like_fields(2, size, seed=1)
    assert degrade(hr, factor).shape == hr.shape
    assert torch.allclose(degrade(a * hr + b, factor), a * degrade(hr, factor) + b, atol=1e-4 * (1 + a))
    const = torch.full((1, 1, size, size), b)
    assert torch.allclose(degrade(const, factor), const, atol=1e-5)


def test_alphas_decrease_from_one():
    ab = ddpm_alphas_cumprod(1000)
    assert 0.999 < float(ab[0]) <= 1 and float(ab[-1]) < 1e-3 and bool((ab[1:] < ab[:-1]).all())


def test_training_loss_falls_on_cpu():
    from pytest_genai.devices import Device
    from pytest_genai.diffusion import train_steps

    torch.set_num_threads(1)
    r = train_steps(DiffusionConfig(base_width=16, steps=10, warmup_steps=2), Device("cpu", 0, "cpu", "cpu"))
    assert len(r.step_times_s) == 10 and r.flops_per_step > 0
    assert sum(r.losses[-3:]) / 3 < r.losses[0]


@pytest.mark.parametrize("dtype, tf32_inside", [("fp32", False), ("bf16", True)])
def test_fp32_steps_run_without_tf32_and_the_switches_come_back(monkeypatch, dtype, tf32_inside):
    """cuDNN's default runs fp32 convolutions on TF32 (the first H200 run's "fp32" row read 78% of the fp32 peak):
    inside an fp32 step both TF32 switches are off; bf16 steps keep them; after the steps they hold what they held."""
    torch = pytest.importorskip("torch")
    from pytest_genai.devices import Device
    from pytest_genai.diffusion import train

    seen = []
    loss = train.ddpm_loss

    def spy(*args, **kwargs):
        seen.append((torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32))
        return loss(*args, **kwargs)

    monkeypatch.setattr(train, "ddpm_loss", spy)
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    # saved and restored by hand: these switches live behind torch's own __setattr__, which pytest 9.2's
    # monkeypatch takes for instance attributes and tries to delete on undo
    saved = (cudnn.allow_tf32, matmul.allow_tf32)
    try:
        cudnn.allow_tf32 = matmul.allow_tf32 = True
        train.train_steps(DiffusionConfig(base_width=8, steps=2, warmup_steps=1, dtype=dtype),
                          Device("cpu", 0, "cpu", "cpu"))
        assert seen and all(s == (tf32_inside, tf32_inside) for s in seen), seen
        assert cudnn.allow_tf32 and matmul.allow_tf32
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved


@pytest.mark.parametrize("before", ["tf32", "ieee"])
def test_fp32_steps_work_where_the_process_set_torchs_new_precision_switches(before):
    """Where a process set torch's per-backend ``fp32_precision`` (torch 2.9 on), reading the legacy TF32 switches
    raises; the fp32 block sets and restores the new ones instead, and full fp32 holds inside."""
    torch = pytest.importorskip("torch")
    from pytest_genai.diffusion.train import ieee_fp32

    matmul, conv = torch.backends.cuda.matmul, getattr(torch.backends.cudnn, "conv", None)
    if not (hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision")):
        pytest.skip(f"torch {torch.__version__} has no per-backend fp32_precision")
    saved = (matmul.fp32_precision, conv.fp32_precision)
    try:
        matmul.fp32_precision = conv.fp32_precision = before
        if before == "tf32":  # the state the block meets: the legacy switches cannot be read
            with pytest.raises(RuntimeError, match="legacy and new"):
                bool(torch.backends.cuda.matmul.allow_tf32)
        with ieee_fp32(True):
            assert (matmul.fp32_precision, conv.fp32_precision) == ("ieee", "ieee")
        assert (matmul.fp32_precision, conv.fp32_precision) == (before, before)
        with ieee_fp32(False):
            assert (matmul.fp32_precision, conv.fp32_precision) == (before, before)
    finally:
        matmul.fp32_precision, conv.fp32_precision = saved
