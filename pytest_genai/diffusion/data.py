"""Synthetic dust-like images: log-normal random fields with a power-law power spectrum (labelled synthetic).

Galactic dust emission maps have power spectra close to P(k) ∝ k^-2.8 and roughly log-normal intensities;
these fields share those statistics. They stand in for the paper's data, which is not available offline.
"""
from __future__ import annotations

from typing import Any


def power_law_field(n: int, size: int, beta: float = 2.8, generator: Any = None) -> Any:
    """``n`` zero-mean, unit-variance Gaussian fields of ``size``×``size`` with power spectrum ∝ k^-beta."""
    import torch

    if size < 2:
        raise ValueError(f"size must be >= 2, got {size}")
    kx = torch.fft.fftfreq(size)
    ky = torch.fft.rfftfreq(size)
    k = torch.sqrt(kx[:, None] ** 2 + ky[None, :] ** 2)
    k[0, 0] = 1.0
    amplitude = k ** (-beta / 2)
    amplitude[0, 0] = 0.0  # zero mean
    noise = torch.randn(n, size, size // 2 + 1, dtype=torch.complex64, generator=generator)
    field = torch.fft.irfft2(noise * amplitude, s=(size, size))
    field = field - field.mean(dim=(-2, -1), keepdim=True)
    return field / field.std(dim=(-2, -1), keepdim=True).clamp_min(1e-12)


def dust_like_fields(n: int, size: int, channels: int = 1, seed: int = 0) -> Any:
    """Log-normal images standardised to zero mean and unit variance, shape (n, channels, size, size)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    g = power_law_field(n * channels, size, generator=gen).reshape(n, channels, size, size)
    x = torch.exp(0.5 * g)
    return (x - x.mean()) / x.std()


def degrade(hr: Any, factor: int) -> Any:
    """The low-resolution observation: average-pool by ``factor``, then bilinear upsampling back to full size
    (the conditioning input of the super-resolution model)."""
    import torch.nn.functional as F

    lr = F.avg_pool2d(hr, factor)
    return F.interpolate(lr, scale_factor=factor, mode="bilinear", align_corners=False)
