"""Frozen configuration of the super-resolution diffusion workload."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DiffusionConfig:
    image_size: int = 32          # high-resolution side, pixels
    scale_factor: int = 4         # low-resolution side = image_size / scale_factor
    channels: int = 1             # dust intensity maps are single-channel
    base_width: int = 32          # U-Net channels at full resolution (doubled once)
    groups: int = 8               # GroupNorm groups
    timesteps: int = 1000         # DDPM noise steps
    batch_size: int = 8           # per process
    steps: int = 12               # timed training steps
    warmup_steps: int = 3
    lr: float = 3e-4
    dtype: str = "fp32"           # fp32 or bf16 (autocast)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("image_size", "scale_factor", "channels", "base_width", "groups", "timesteps", "batch_size", "steps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"DiffusionConfig.{name} must be positive, got {getattr(self, name)}")
        if self.warmup_steps < 1:
            raise ValueError(f"DiffusionConfig.warmup_steps must be >= 1, got {self.warmup_steps}: the first step runs "
                             "under torch's FLOP counter and is never timed, so it is the first warm-up step")
        if self.image_size % self.scale_factor or self.image_size % 2:
            raise ValueError(
                f"DiffusionConfig.image_size {self.image_size} must be even and divisible by scale_factor {self.scale_factor}"
            )
        if self.base_width % self.groups:
            raise ValueError(f"DiffusionConfig.base_width {self.base_width} must be divisible by groups {self.groups}")
        if self.dtype not in ("fp32", "bf16"):
            raise ValueError(f"DiffusionConfig.dtype {self.dtype!r}: use 'fp32' or 'bf16'")

    @property
    def id(self) -> str:
        return f"sr{self.image_size}x{self.scale_factor}-w{self.base_width}-b{self.batch_size}-{self.dtype}"
