"""Multi-node settings from a Slurm job step: nodes, this node's rank and the rendezvous endpoint.

Under ``srun`` with one pytest per node (``srun --ntasks-per-node=1 pytest ...``), Slurm already says everything
torchrun needs: ``SLURM_NNODES`` nodes, this one is ``SLURM_NODEID``, and the first host of ``SLURM_JOB_NODELIST``
can serve the rendezvous. :func:`from_env` reads that, so the ``--genai-nnodes`` / ``--genai-rdzv-endpoint`` flags
can be left out; a flag that is given always wins (see ``options``). Outside a job step (``SLURM_STEP_ID`` unset,
e.g. ``pytest`` typed on the first node of an ``salloc``) nothing is derived: the other nodes would never join.

The node list is expanded by ``scontrol show hostnames`` where it exists (Slurm's own rules); elsewhere by
:func:`expand_nodelist`, which handles the common forms (``n[01-03,07]``, ``a1,b[2-3]``, ``r1n[1-2]``).
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from typing import Callable, Mapping, Sequence

#: The rendezvous port when ``GENAI_RDZV_PORT`` is not set: torchrun's default, shifted by the job id so that two
#: jobs sharing a first node do not collide.
BASE_PORT = 29500
PORT_SPREAD = 1000


@dataclasses.dataclass(frozen=True)
class SlurmStep:
    job_id: str
    nnodes: int
    node_rank: int
    hosts: tuple[str, ...]
    port: int

    @property
    def rdzv_endpoint(self) -> str:
        return f"{self.hosts[0]}:{self.port}"


def expand_nodelist(nodelist: str) -> list[str]:
    """``n[01-03,07],gpu5`` -> ``['n01', 'n02', 'n03', 'n07', 'gpu5']`` (zero padding kept, one bracket group per
    host name). Raises ValueError naming the list when it cannot be read."""
    hosts: list[str] = []
    for part in _split_outside_brackets(nodelist):
        match = re.fullmatch(r"([^\[\]]*)\[([^\]]+)\]([^\[\]]*)", part)
        if match is None:
            if "[" in part or "]" in part or not part:
                raise ValueError(f"SLURM_JOB_NODELIST={nodelist!r}: cannot expand {part!r}; "
                                 "set --genai-rdzv-endpoint host:port explicitly")
            hosts.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            lo, sep, hi = item.partition("-")
            if not lo.isdigit() or (sep and not hi.isdigit()):
                raise ValueError(f"SLURM_JOB_NODELIST={nodelist!r}: {item!r} is not a number or a range; "
                                 "set --genai-rdzv-endpoint host:port explicitly")
            width = len(lo)
            for n in range(int(lo), int(hi if sep else lo) + 1):
                hosts.append(f"{prefix}{n:0{width}d}{suffix}")
    if not hosts:
        raise ValueError(f"SLURM_JOB_NODELIST={nodelist!r} names no host; set --genai-rdzv-endpoint host:port")
    return hosts


def _split_outside_brackets(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return parts + [current]


def scontrol_hostnames(nodelist: str, timeout_s: float = 10.0) -> list[str] | None:
    """Slurm's own expansion of ``nodelist``; None when ``scontrol`` is absent or fails (then the fallback is used)."""
    exe = shutil.which("scontrol")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "show", "hostnames", nodelist], capture_output=True, text=True,
                             timeout=timeout_s, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    hosts = [line.strip() for line in out.splitlines() if line.strip()]
    return hosts or None


def from_env(env: Mapping[str, str],
             hostnames: Callable[[str], Sequence[str] | None] = scontrol_hostnames) -> SlurmStep | None:
    """The job step this process runs in, or None outside a multi-node Slurm job step."""
    if "SLURM_JOB_ID" not in env or "SLURM_STEP_ID" not in env:
        return None
    try:
        nnodes = int(env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES") or "1")
        node_rank = int(env.get("SLURM_NODEID", "0"))
    except ValueError as exc:
        raise ValueError(f"Slurm environment: SLURM_NNODES / SLURM_NODEID must be integers ({exc})") from None
    if nnodes <= 1:
        return None
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
    if not nodelist:
        raise ValueError("Slurm environment: SLURM_JOB_NODELIST is not set; set --genai-rdzv-endpoint host:port")
    hosts = tuple(hostnames(nodelist) or expand_nodelist(nodelist))
    if len(hosts) != nnodes:
        raise ValueError(f"Slurm environment: SLURM_NNODES={nnodes} but the node list {nodelist!r} has "
                         f"{len(hosts)} hosts; set --genai-nnodes and --genai-rdzv-endpoint explicitly")
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"Slurm environment: SLURM_NODEID={node_rank} is outside 0..{nnodes - 1}")
    port_text = env.get("GENAI_RDZV_PORT")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"GENAI_RDZV_PORT={port_text!r}: use a TCP port number (1-65535)")
        port = int(port_text)
    else:
        digits = re.sub(r"\D", "", env["SLURM_JOB_ID"]) or "0"
        port = BASE_PORT + int(digits) % PORT_SPREAD
    return SlurmStep(env["SLURM_JOB_ID"], nnodes, node_rank, hosts, port)


def node_label(env: Mapping[str, str]) -> str:
    """What ``{node}`` in a ``--benchmark-json`` path becomes: this node's rank in a Slurm job or torchrun
    (``SLURM_NODEID``, ``GROUP_RANK``/``NODE_RANK``), else ``0`` (one node)."""
    for key in ("SLURM_NODEID", "NODE_RANK", "GROUP_RANK"):
        value = env.get(key, "")
        if value.isdigit():
            return value
    return "0"
