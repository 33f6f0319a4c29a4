"""Paper A, A3: training a super-resolution diffusion model (DDPM noise prediction with a small U-Net).

The paper trains on astrophysical images of galactic dust, which are not available here; the suite trains on
synthetic log-normal random fields with a power-law spectrum (dust-like statistics, labelled as synthetic
everywhere). Throughput does not depend on pixel values, and the loss must fall, which shows the training is real.
"""
from pytest_genai.diffusion.config import DiffusionConfig
from pytest_genai.diffusion.data import degrade, dust_like_fields, power_law_field
from pytest_genai.diffusion.train import TrainResult, train_steps

__all__ = ["DiffusionConfig", "TrainResult", "degrade", "dust_like_fields", "power_law_field", "train_steps"]
