"""One gloo rank in a fresh Python process, for tests whose subject is process-wide state (DeepSpeed's zero.Init
patches torch; a first import must happen in a process that has done nothing else)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

#: Run before the test's own script: a one-rank gloo group on a free port, DeepSpeed on its CPU accelerator.
PROLOGUE = """
import os, sys, json
os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1], RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
import torch.distributed as dist
dist.init_process_group("gloo")
"""


def run_one_rank(script: str, cwd: Path, timeout_s: float = 300) -> Any:
    """Runs ``PROLOGUE + script`` with this checkout first on the path (not whatever copy the editable install points
    at); fails with the process's output unless it exits 0; returns the JSON its last line of output holds."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", PROLOGUE + script, port], capture_output=True, text=True,
                          timeout=timeout_s, cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
