"""What every torchrun rank of this suite does at its start and end (the train, scaling and diffusion workers).

* :func:`rank_env`: RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE as torchrun sets them, or a clear error.
* :func:`finish`: rank 0 writes the job's result JSON atomically to ``$PYTEST_GENAI_RESULT`` (where
  :func:`pytest_genai.runtime.launcher.launch` reads it; local rank 0 of another node writes a marker there); then every rank meets at a barrier, leaves the process
  group and exits with ``os._exit(0)`` (returns, in a rank forked by :mod:`pytest_genai.runtime.warm`). With torch 2.13 + gloo a normal interpreter exit sometimes aborts a rank
  after all its work (``terminate called without an active exception``); the result is already written by then.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
#: What local rank 0 of a node that does not host global rank 0 writes as its node's result: under c10d rendezvous
#: (several nodes, no node rank known: not Slurm) node ranks go by arrival order, so only the job tells a node
#: whether it holds the result; the launcher turns this into "no result on this node" rather than a failure.
RESULT_ON_ANOTHER_NODE = "__genai_result_on_another_node__"


def rank_env(module: str = "this module") -> dict[str, int]:
    """``{"rank", "local_rank", "world_size", "local_world_size"}`` from torchrun's environment."""
    try:
        return {k.lower(): int(os.environ[k]) for k in RANK_VARS}
    except KeyError as exc:
        raise RuntimeError(f"{exc.args[0]} is not set: run {module} under torchrun "
                           "(pytest_genai.runtime.launcher.launch starts it)") from None


def finish(result: dict[str, Any] | None) -> None:
    """Write ``result`` (rank 0 passes it, the others None), then leave the process group and exit 0 (a rank forked
    by the warm launcher, :mod:`pytest_genai.runtime.warm`, returns instead: its agent collects the return value)."""
    import torch.distributed as dist

    from pytest_genai.atomic import write_json_atomic

    if result is not None:
        write_json_atomic(os.environ["PYTEST_GENAI_RESULT"], result)
    elif os.environ.get("LOCAL_RANK") == "0" and os.environ.get("GROUP_RANK", "0") != "0":
        write_json_atomic(os.environ["PYTEST_GENAI_RESULT"], {RESULT_ON_ANOTHER_NODE: int(os.environ["GROUP_RANK"])})
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.environ.get("PYTEST_GENAI_RANK_RETURNS"):
        return
    os._exit(0)


def run_worker(module: str, run_job: Callable[[dict[str, Any], dict[str, int]], dict[str, Any] | None],
               argv: list[str] | None = None) -> int:
    """A worker's ``main``: read ``JOB.json`` (the one argument), run ``run_job(job, rank_env)`` on this rank and
    :func:`finish` with its result (rank 0's dict, None elsewhere). Returns 2 on a usage error."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(f"usage: torchrun ... -m {module} JOB.json", file=sys.stderr)
        return 2
    env = rank_env(module)
    with open(argv[0], encoding="utf-8") as fh:
        job = json.load(fh)
    finish(run_job(job, env))
    return 0
