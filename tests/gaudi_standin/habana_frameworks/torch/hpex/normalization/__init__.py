"""Stand-in for ``habana_frameworks.torch.hpex.normalization``: no fused RMSNorm (callers fall back when it is
absent)."""
