"""Stand-in for ``habana_frameworks.torch.distributed``: no HCCL here (the leg's ranks use gloo)."""
