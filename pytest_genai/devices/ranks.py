"""The one rule for ``--genai-nproc`` against what a node has: every distributed benchmark (diffusion DDP, fine-tuning,
DABench Level 2) asks :func:`ranks_problem` before launching and skips with its reason.

One rank per CPU core, one rank per GPU or Gaudi HPU: more ranks than that would oversubscribe the node
(``--genai-nproc 99999`` would start 99999 processes), and the scaling numbers would measure the contention, not the
method. A skip, not a usage error: the same ``--genai-nproc`` is right for one device kind of the run and too large
for another.
"""
from __future__ import annotations


def ranks_problem(kind: str, nproc: int, *, cores: int | None = None, gpus: int | None = None,
                  hpus: int | None = None) -> str | None:
    """Why ``nproc`` ranks per node cannot run on ``kind`` here (a skip reason naming the option and the fix), or
    None. ``cores`` (default: this process's CPU affinity), ``gpus`` (default: torch's CUDA device count) and ``hpus``
    (default: habana_frameworks' HPU count) are the node's measured counts."""
    if kind == "cpu":
        if cores is None:
            from pytest_genai.runtime.threads import available_cores

            cores = available_cores()
        if nproc > cores:
            return (f"--genai-nproc {nproc} needs {nproc} CPU cores (one per rank); this process may use {cores}: "
                    f"lower --genai-nproc to {cores} or fewer")
    elif kind == "cuda":
        if gpus is None:
            import torch

            gpus = torch.cuda.device_count()
        if nproc > gpus:
            return (f"--genai-nproc {nproc} needs {nproc} GPUs per node (one per rank), found {gpus}: "
                    f"lower --genai-nproc to {gpus} or fewer")
    elif kind == "hpu":
        if hpus is None:
            import habana_frameworks.torch.hpu as hthpu

            hpus = hthpu.device_count()
        if nproc > hpus:
            return (f"--genai-nproc {nproc} needs {nproc} Gaudi HPUs per node (one per rank), found {hpus}: "
                    f"lower --genai-nproc to {hpus} or fewer")
    return None
