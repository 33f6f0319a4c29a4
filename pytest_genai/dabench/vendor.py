"""The DABench workload on the dataflow chips, and where their profiles are found.

* IPU (Graphcore): the same :class:`DecoderConfig` stack is compiled with PopTorch (``poptorch.inferenceModel`` /
  ``poptorch.trainingModel``) with PopVision auto-reporting on, timed on the host around synchronous calls, and its
  ``profile.pop`` read by :mod:`.readers.graphcore`. Written against the PopTorch user guide; not run here (no IPU).
* WSE (Cerebras) and RDU (SambaNova): their SDKs compile through the vendors' own launchers (the Cerebras Model Zoo
  run scripts; SambaFlow ``compile``/``run`` apps), which this package does not drive. Their profiles
  (``compile_report.txt``; SambaTune ``reports/section_report.csv``) are read from a directory laid out by
  :func:`profile_path` and given with ``--genai-dabench-profiles``.

SDK imports happen inside functions, only where called; absent SDKs raise :class:`VendorUnavailable` with how to
enable them.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

from pytest_genai.dabench.config import DecoderConfig

#: File name of each vendor's profile inside ``<profiles dir>/<kind>/<config id>/``.
PROFILE_FILES = {"wse": "compile_report.txt", "rdu": "section_report.csv", "ipu": "profile.pop"}


class VendorUnavailable(RuntimeError):
    """The vendor SDK or profile needed for a dataflow device is not present here."""


def profile_path(root: str | Path, kind: str, cfg: DecoderConfig) -> Path:
    """Where the profile of ``cfg`` on ``kind`` is expected: ``<root>/<kind>/<cfg.id>/<vendor file>``."""
    if kind not in PROFILE_FILES:
        raise ValueError(f"no dataflow profile for device kind {kind!r}; use one of {sorted(PROFILE_FILES)}")
    return Path(root) / kind / cfg.id / PROFILE_FILES[kind]


def read_profile(root: str | Path, kind: str, cfg: DecoderConfig) -> Any:
    """The :class:`~pytest_genai.dabench.readers.DataflowProfile` of ``cfg`` on ``kind`` from ``root``."""
    path = profile_path(root, kind, cfg)
    if not path.exists():
        raise VendorUnavailable(f"no {kind} profile for {cfg.id} at {path}")
    if kind == "wse":
        from pytest_genai.dabench.readers.cerebras import read_compile_report

        return read_compile_report(path)
    if kind == "rdu":
        from pytest_genai.dabench.readers.sambanova import read_section_report

        return read_section_report(path)
    from pytest_genai.dabench.readers.graphcore import read_popvision

    return read_popvision(path)


@dataclasses.dataclass(frozen=True)
class VendorRun:
    step_s: float  # median seconds of one step
    profile_file: Path | None


def run_on_ipu(cfg: DecoderConfig, report_dir: str | Path, *, repeats: int = 5) -> VendorRun:
    """Compile and time ``cfg`` with PopTorch on one IPU, writing the PopVision report under ``report_dir``."""
    try:
        import poptorch
    except ImportError as exc:
        raise VendorUnavailable("poptorch is not installed: install the Poplar SDK and its poptorch wheel") from exc
    import statistics

    import torch

    from pytest_genai.dabench import model

    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    # Must be set before compilation; Poplar reads it when the engine is created.
    os.environ["POPLAR_ENGINE_OPTIONS"] = json.dumps(
        {"autoReport.all": "true", "autoReport.directory": str(report_dir)}
    )
    stack = model.build_stack(cfg, torch.device("cpu"))
    x = model.make_input(cfg, torch.device("cpu"))
    opts = poptorch.Options()
    if cfg.mode == "forward":
        runner = poptorch.inferenceModel(stack.eval(), opts)
    else:

        class WithLoss(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, inputs: Any) -> Any:
                out = self.inner(inputs)
                return out, poptorch.identity_loss(out.float().pow(2).mean(), reduction="none")

        runner = poptorch.trainingModel(
            WithLoss(stack.train()), opts, optimizer=poptorch.optim.AdamW(stack.parameters(), lr=1e-4)
        )
    runner.compile(x)
    runner(x)  # warm-up; PopTorch calls return host tensors, so each call is complete when it returns
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        runner(x)
        samples.append(time.perf_counter() - t0)
    pops = sorted(report_dir.rglob("profile.pop"), key=lambda p: p.stat().st_mtime)
    return VendorRun(statistics.median(samples), pops[-1] if pops else None)
