"""Stand-in for ``habana_frameworks.torch.hpex`` (Habana's extra kernels): only ``kernels.FusedSDPA``."""
