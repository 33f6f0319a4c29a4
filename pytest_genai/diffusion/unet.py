"""A small conditional U-Net for DDPM super-resolution: input = noisy HR image ⊕ upsampled LR image."""
from __future__ import annotations

import math


def build_unet(cfg):
    import torch
    from torch import nn

    class ResBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, t_dim: int):
            super().__init__()
            self.norm1 = nn.GroupNorm(cfg.groups, c_in)
            self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
            self.time = nn.Linear(t_dim, c_out)
            self.norm2 = nn.GroupNorm(cfg.groups, c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
            self.skip = nn.Identity() if c_in == c_out else nn.Conv2d(c_in, c_out, 1)

        def forward(self, x, t):
            h = self.conv1(nn.functional.silu(self.norm1(x)))
            h = h + self.time(t)[:, :, None, None]
            h = self.conv2(nn.functional.silu(self.norm2(h)))
            return h + self.skip(x)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            w, t_dim = cfg.base_width, 4 * cfg.base_width
            self.t_dim = w
            self.time_mlp = nn.Sequential(nn.Linear(w, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
            self.inp = nn.Conv2d(2 * cfg.channels, w, 3, padding=1)
            self.down1 = ResBlock(w, w, t_dim)
            self.pool = nn.Conv2d(w, w, 3, stride=2, padding=1)
            self.down2 = ResBlock(w, 2 * w, t_dim)
            self.mid = ResBlock(2 * w, 2 * w, t_dim)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.up2 = ResBlock(3 * w, w, t_dim)
            self.out = nn.Sequential(nn.GroupNorm(cfg.groups, w), nn.SiLU(), nn.Conv2d(w, cfg.channels, 3, padding=1))

        def time_embedding(self, t):
            half = self.t_dim // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
            args = t.float()[:, None] * freqs[None, :]
            return self.time_mlp(torch.cat([args.sin(), args.cos()], dim=1))

        def forward(self, noisy, cond, t):
            temb = self.time_embedding(t)
            h0 = self.down1(self.inp(torch.cat([noisy, cond], dim=1)), temb)
            h1 = self.mid(self.down2(self.pool(h0), temb), temb)
            h = self.up2(torch.cat([self.up(h1), h0], dim=1), temb)
            return self.out(h)

    return UNet()
