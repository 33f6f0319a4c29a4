"""DDPM training steps for the super-resolution model, timed with device synchronization."""
from __future__ import annotations

import contextlib
import dataclasses
import statistics
from collections.abc import Iterator
from typing import Any, Callable

from pytest_genai.diffusion.config import DiffusionConfig


@dataclasses.dataclass(frozen=True)
class TrainResult:
    step_times_s: tuple[float, ...]
    losses: tuple[float, ...]
    images_per_step: int
    flops_per_step: float  # counted by torch's FlopCounterMode on one real step (forward + backward)

    @property
    def median_step_s(self) -> float:
        return statistics.median(self.step_times_s)

    @property
    def images_per_s(self) -> float:
        return self.images_per_step / self.median_step_s

    @property
    def achieved_tflops(self) -> float:
        return self.flops_per_step / self.median_step_s / 1e12


def ddpm_alphas_cumprod(timesteps: int) -> Any:
    """Linear beta schedule (Ho et al. 2020: 1e-4 → 0.02) and its cumulative product ᾱ_t."""
    import torch

    betas = torch.linspace(1e-4, 0.02, timesteps, dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0).float()


def ddpm_loss(model: Any, hr: Any, cond: Any, alphas_cumprod: Any, generator: Any = None) -> Any:
    """Noise-prediction loss: ||ε − ε_θ(√ᾱ_t x₀ + √(1−ᾱ_t) ε, cond, t)||² at a uniformly sampled t."""
    import torch

    n = hr.shape[0]
    t = torch.randint(0, alphas_cumprod.numel(), (n,), device=hr.device, generator=generator)
    noise = torch.randn(hr.shape, device=hr.device, generator=generator)
    ab = alphas_cumprod.to(hr.device)[t][:, None, None, None]
    noisy = ab.sqrt() * hr + (1 - ab).sqrt() * noise
    return torch.nn.functional.mse_loss(model(noisy, cond, t), noise)


@dataclasses.dataclass
class Trainer:
    """One model's DDPM training, a step at a time: ``flops_per_step`` counted on step 0, then :meth:`timed_step`."""

    step: Any  # step(i) -> loss tensor
    device: Any
    images_per_step: int
    flops_per_step: float
    first_loss: float
    next_index: int = 1

    def timed_step(self) -> tuple[float, float]:
        """Run the next step with device synchronization; (seconds, loss)."""
        from pytest_genai.runtime.timing import timed

        elapsed, loss = timed(lambda: self.step(self.next_index), sync=self.device.synchronize)
        self.next_index += 1
        return elapsed, float(loss.detach())


def graph_break(device: Any) -> Callable[[], None]:
    """What a training step calls after ``loss.backward()`` and after ``opt.step()``: on an HPU, Habana's
    ``habana_frameworks.torch.core.mark_step`` (lazy mode accumulates ops until a mark_step compiles and launches
    them as one graph; optimum-habana's GaudiTrainer marks a step at both places); elsewhere nothing."""
    if device.kind != "hpu":
        return _nothing
    import habana_frameworks.torch.core as htcore

    return htcore.mark_step


def _nothing() -> None:
    return None


@contextlib.contextmanager
def ieee_fp32(enabled: bool) -> Iterator[None]:
    """fp32 math that is fp32: cuDNN runs fp32 convolutions on TF32 tensor cores unless told otherwise
    (``torch.backends.cudnn.allow_tf32`` defaults to True), and an "fp32" row would run on TF32 yet be divided by
    the fp32 peak. Inside, convolutions and matmuls keep full fp32 (both
    switches off; the previous values come back on exit). A no-op where ``enabled`` is False."""
    if not enabled:
        yield
        return
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    try:
        saved = (matmul.allow_tf32, cudnn.allow_tf32)
    except RuntimeError:
        # the process set torch's per-backend fp32_precision (2.9 on), and the legacy switches now raise ("a mix of
        # the legacy and new APIs"): the new ones are saved, set and restored, for matmuls and convolutions
        saved_new = (matmul.fp32_precision, cudnn.conv.fp32_precision)
        matmul.fp32_precision = cudnn.conv.fp32_precision = "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision, cudnn.conv.fp32_precision = saved_new
        return
    # a process on the legacy switches stays on them: setting the new ones here would make its own reads raise
    matmul.allow_tf32 = cudnn.allow_tf32 = False
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = saved


def make_trainer(cfg: DiffusionConfig, device: Any, model: Any = None, wrap: Any = None) -> Trainer:
    """Build the model, optimizer and data of ``cfg`` on ``device`` (a pytest_genai Device) and run step 0 under
    torch's FlopCounterMode. ``wrap`` optionally wraps the model (e.g. DistributedDataParallel) after it is moved
    to the device. On an HPU each step ends its backward and its optimizer step with a lazy-mode mark_step
    (:func:`graph_break`)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_genai.diffusion.data import degrade, dust_like_fields
    from pytest_genai.diffusion.unet import build_unet

    torch.manual_seed(cfg.seed)
    tdev = device.torch_device
    if model is None:
        model = build_unet(cfg)
    model = model.to(tdev)
    if wrap is not None:
        model = wrap(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    alphas = ddpm_alphas_cumprod(cfg.timesteps)
    hr_all = dust_like_fields(cfg.batch_size * 4, cfg.image_size, cfg.channels, seed=cfg.seed)
    cond_all = degrade(hr_all, cfg.scale_factor)
    gen = torch.Generator(device="cpu").manual_seed(cfg.seed + 1)
    autocast = torch.autocast(device_type=tdev.type, dtype=torch.bfloat16, enabled=cfg.dtype == "bf16")
    mark_step = graph_break(device)

    def step(i: int) -> Any:
        j = (i % 4) * cfg.batch_size
        hr = hr_all[j:j + cfg.batch_size].to(tdev, non_blocking=True)
        cond = cond_all[j:j + cfg.batch_size].to(tdev, non_blocking=True)
        with ieee_fp32(cfg.dtype == "fp32"):
            with autocast:
                loss = ddpm_loss(model, hr, cond, alphas, generator=gen if tdev.type == "cpu" else None)
            opt.zero_grad(set_to_none=True)
            loss.backward()
        mark_step()
        opt.step()
        mark_step()
        return loss

    counter = FlopCounterMode(display=False)
    with counter:
        first = step(0)
    return Trainer(step, device, cfg.batch_size, float(counter.get_total_flops()), float(first.detach()))


def train_steps(cfg: DiffusionConfig, device: Any, model: Any = None, wrap: Any = None) -> TrainResult:
    """Warm up, then time ``cfg.steps`` optimizer steps on ``device`` (a pytest_genai Device).

    ``wrap`` optionally wraps the model (e.g. DistributedDataParallel) after it is moved to the device.
    """
    trainer = make_trainer(cfg, device, model, wrap)
    losses = [trainer.first_loss]
    times = []
    for i in range(1, cfg.warmup_steps + cfg.steps):
        elapsed, loss = trainer.timed_step()
        losses.append(loss)
        if i >= cfg.warmup_steps:
            times.append(elapsed)
    return TrainResult(tuple(times), tuple(losses), cfg.batch_size, trainer.flops_per_step)

