"""Stand-in for ``habana_frameworks.torch.distributed.hccl``: importing the real one registers the ``hccl`` backend;
this registers nothing, so a process group asking for hccl fails as it would without the bridge."""
