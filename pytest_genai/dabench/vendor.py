"""The DABench workload on the dataflow chips, and where their profiles are found.

* IPU (Graphcore): the same :class:`DecoderConfig` stack is compiled with PopTorch (``poptorch.inferenceModel`` /
  ``poptorch.trainingModel``) with PopVision auto-reporting on, timed on the host around synchronous calls, and its
  ``profile.pop`` read by :mod:`.readers.graphcore`. Written against the PopTorch user guide; not run here (no IPU).
  The bound comes from an execution profile taken in a separate, untimed run (:func:`execution_profile_path`,
  ``PROFILE_HOWTO["ipu-execution"]``): the timed run writes the graph profile only.
* WSE (Cerebras) and RDU (SambaNova): their SDKs compile through the vendors' own launchers (the Cerebras Model Zoo
  run scripts; SambaFlow ``compile``/``run`` apps), which this package does not drive. Their profiles
  (``compile_report.txt``; SambaTune ``reports/section_report.csv``) are read from a directory laid out by
  :func:`profile_path` and given with ``--genai-dabench-profiles``.

SDK imports happen inside functions, only where called; absent SDKs raise :class:`VendorUnavailable` with how to
enable them. Where no SDK is present but ``<profiles dir>/<kind>/`` exists, :func:`with_artifact_devices` makes the
kind present as an *artifact device* (its outputs are read, nothing runs), so the vendor benchmarks check the claims
from the files a user of those systems collected. A compile or out-of-memory failure at a size is a capacity
result (:func:`read_capacity_sweep`), never an error.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_genai.dabench.config import DecoderConfig

#: File name of each vendor's profile inside ``<profiles dir>/<kind>/<config id>/``.
PROFILE_FILES = {"wse": "compile_report.txt", "rdu": "section_report.csv", "ipu": "profile.pop"}


#: How each profile is produced (for skip messages; docs/dabench.md has the details).
PROFILE_HOWTO = {
    "wse": "compile the config with the Cerebras Model Zoo (`python run.py CSX --mode train --compile_only "
           "--params params.yaml`) and copy compile_report.txt from its cs_<hash>/ folder",
    "rdu": "profile the config under SambaTune (`sambatune app.yaml --modes benchmark instrument run`) and copy "
           "reports/section_report.csv",
    "ipu": "run the config once with POPLAR_ENGINE_OPTIONS autoReport.outputGraphProfile=true and copy profile.pop "
           "(reading it needs pva from the Poplar SDK)",
    "ipu-execution": "profile the config in a separate, untimed run with POPLAR_ENGINE_OPTIONS='{\"autoReport."
                     "outputGraphProfile\":\"true\",\"autoReport.outputExecutionProfile\":\"true\",\"autoReport."
                     "directory\":\"OUT\"}' (vendor.ipu_engine_options(OUT, execution_profile=True)) and copy "
                     "OUT/.../profile.pop to <DIR>/ipu/<config id>/execution/profile.pop",
}
#: Folder, inside ``<profiles dir>/ipu/<config id>/``, of the execution profile (a separate profiling run).
EXECUTION_DIR = "execution"

#: Generation assumed for an artifact device of each kind (override with GENAI_<KIND>_GENERATION, as for live probes).
ARTIFACT_GENERATIONS = {"wse": "wse-2", "rdu": "sn30", "ipu": "bow-ipu"}
CAPACITY_DIR = "capacity"
_CONFIG_ID = re.compile(r"^L(\d+)-(.+)$")


class VendorUnavailable(RuntimeError):
    """The vendor SDK or profile needed for a dataflow device is not present here."""


def with_artifact_devices(probes: dict[str, Callable[[], Any]], root: str | Path | None) -> None:
    """Where ``root/<kind>/`` exists, a dataflow kind whose live probe finds nothing becomes an artifact device."""
    if not root:
        return
    for kind in PROFILE_FILES:
        if kind in probes and (Path(root) / kind).is_dir():
            probes[kind] = _live_or_artifacts(kind, probes[kind], Path(root))


def _live_or_artifacts(kind: str, live: Callable[[], Any], root: Path) -> Callable[[], Any]:
    def probe() -> Any:
        from pytest_genai.devices.device import Device
        from pytest_genai.devices.probes import ProbeResult, run_probe
        from pytest_genai.devices.specs import load_specs

        result = run_probe(kind, live)
        if result.available:
            return result
        generation = os.environ.get(f"GENAI_{kind.upper()}_GENERATION", ARTIFACT_GENERATIONS[kind])
        name = f"{generation} artifacts in {root / kind} (no SDK here: outputs are read, nothing runs)"
        return ProbeResult(kind, (Device(kind, 0, name, generation, load_specs().get(generation)),))

    return probe


#: Log lines saying a compile finished (Model Zoo; PopTorch's progress bar at 100%), for a folder without a profile.
COMPILED_MARKERS = re.compile(r"compile was successful|graph compilation: 100%", re.I)


def read_capacity_sweeps(root: str | Path, kind: str) -> dict[str, tuple[Any, dict[int, Path]]]:
    """Every sweep of ``<root>/<kind>/capacity/``: one folder per attempted (config, layer count), named by config id.

    A folder whose ``*.log`` files report an out-of-memory, capacity or compile failure did not fit (a capacity
    result), even where the compile finished and wrote its profile first (Cerebras: ``Compile was successful``, then
    ``ClusterJobInitError`` "cluster lacks requested capacity"). Otherwise a folder with the vendor's profile
    (``compile_report.txt``, ``profile.pop``) fitted, and one without must have logs saying the compile finished
    (``Compile was successful``; PopTorch's ``Graph compilation: 100%``) -- else the folder is in an unknown layout
    (error naming it). Folders differing only in ``L<layers>`` form one sweep. Returns, per config id without
    the layer count, the :class:`~pytest_genai.dabench.capacity.CapacityOutcome` and the folder per count.
    """
    from pytest_genai.dabench.capacity import capacity_from_outcomes, failure_reason
    from pytest_genai.dabench.readers import LayoutError, read_vendor_text

    sweep = Path(root) / kind / CAPACITY_DIR
    if not sweep.is_dir():
        raise VendorUnavailable(f"no {kind} capacity sweep at {sweep}")
    outcomes: dict[str, dict[int, str | None]] = {}
    folders: dict[str, dict[int, Path]] = {}
    for folder in sorted(p for p in sweep.iterdir() if p.is_dir()):
        m = _CONFIG_ID.match(folder.name)
        if not m:
            raise LayoutError(str(folder), None, "a folder named by config id, e.g. L72-h768-a12-s1024-b8-fp16-train")
        layers, group = int(m.group(1)), m.group(2)
        folders.setdefault(group, {})[layers] = folder
        # the logs are read even beside a profile: a job that compiled (and wrote its report) can still fail to get
        # its memory when it runs (Cerebras "cluster lacks requested capacity"): that count did not fit
        logs = sorted(folder.glob("*.log"))
        text = "\n".join(read_vendor_text(p, root, lenient=True) for p in logs)
        reason = failure_reason(text)
        if reason is None and (folder / PROFILE_FILES[kind]).exists():
            outcomes.setdefault(group, {})[layers] = None
            continue
        if reason is None and not COMPILED_MARKERS.search(text):
            raise LayoutError(str(folder), None, f"{PROFILE_FILES[kind]}, or a *.log saying the compile failed "
                                                 "(out of memory / compile error) or 'Compile was successful'")
        outcomes.setdefault(group, {})[layers] = reason
    if not outcomes:
        raise VendorUnavailable(f"the {kind} capacity sweep {sweep} has no config folders")
    return {group: (capacity_from_outcomes(outcomes[group]), folders[group]) for group in sorted(outcomes)}


def read_capacity_sweep(root: str | Path, kind: str) -> tuple[str, Any, dict[int, Path]]:
    """The one sweep of ``<root>/<kind>/capacity/`` (:func:`read_capacity_sweeps`; all folders the same config but
    for the layer count). Returns (config id without layers, outcome, folder per count)."""
    from pytest_genai.dabench.readers import LayoutError

    sweeps = read_capacity_sweeps(root, kind)
    if len(sweeps) > 1:
        raise LayoutError(str(Path(root) / kind / CAPACITY_DIR), None, "one sweep (folders differing only in "
                          "L<layers>)", ", ".join(sweeps))
    ((group, (outcome, folders)),) = sweeps.items()
    return group, outcome, folders


#: SambaFlow compiler modes Paper B compares (o0: one operator per section; o1: fused; o3: the older default).
RDU_COMPILE_MODES = ("o0", "o1", "o3")
COMPILE_MODES_DIR = "compile_modes"


def read_compile_mode_sweeps(root: str | Path) -> tuple[str, dict[str, dict[int, Any]]]:
    """SambaTune section reports per SambaFlow compile mode across layer counts:
    ``<root>/rdu/compile_modes/<o0|o1|o3>/<config id>/section_report.csv`` (mode folders case-insensitive), every
    folder the same config but for the layer count. Returns (config id without layers, {mode: {layers: profile}}).
    """
    from pytest_genai.dabench.readers import LayoutError
    from pytest_genai.dabench.readers.sambanova import read_section_report

    top = Path(root) / "rdu" / COMPILE_MODES_DIR
    if not top.is_dir():
        raise VendorUnavailable(f"no rdu compile-mode sweep at {top}")
    groups: set[str] = set()
    sweeps: dict[str, dict[int, Any]] = {}
    for mode_dir in sorted(p for p in top.iterdir() if p.is_dir()):
        mode = mode_dir.name.lower()
        if mode not in RDU_COMPILE_MODES:
            raise LayoutError(str(mode_dir), None,
                              f"a compile-mode folder named one of {', '.join(RDU_COMPILE_MODES)}")
        for folder in sorted(p for p in mode_dir.iterdir() if p.is_dir()):
            m = _CONFIG_ID.match(folder.name)
            if not m:
                raise LayoutError(str(folder), None,
                                  "a folder named by config id, e.g. L24-h768-a12-s1024-b8-bf16-train")
            report = folder / PROFILE_FILES["rdu"]
            if not report.exists():
                raise LayoutError(str(folder), None,
                                  f"{PROFILE_FILES['rdu']} (SambaTune's reports/section_report.csv)")
            groups.add(m.group(2))
            sweeps.setdefault(mode, {})[int(m.group(1))] = read_section_report(report, root)
    if not sweeps:
        raise VendorUnavailable(f"the rdu compile-mode sweep {top} has no section reports")
    if len(groups) > 1:
        raise LayoutError(str(top), None, "one config swept over layer counts (folders differing only in L<layers>)",
                          ", ".join(sorted(groups)))
    return groups.pop(), sweeps


def profile_path(root: str | Path, kind: str, cfg: DecoderConfig) -> Path:
    """Where the profile of ``cfg`` on ``kind`` is expected: ``<root>/<kind>/<cfg.id>/<vendor file>``."""
    if kind not in PROFILE_FILES:
        raise ValueError(f"no dataflow profile for device kind {kind!r}; use one of {sorted(PROFILE_FILES)}")
    return Path(root) / kind / cfg.id / PROFILE_FILES[kind]


def read_profile(root: str | Path, kind: str, cfg: DecoderConfig) -> Any:
    """The :class:`~pytest_genai.dabench.readers.DataflowProfile` of ``cfg`` on ``kind`` from ``root``."""
    path = profile_path(root, kind, cfg)
    if not path.exists():
        raise VendorUnavailable(f"no {kind} profile for {cfg.id} at {path}: {PROFILE_HOWTO[kind]} (docs/dabench.md)")
    if kind == "wse":
        from pytest_genai.dabench.readers.cerebras import read_compile_report

        return read_compile_report(path, root)
    if kind == "rdu":
        from pytest_genai.dabench.readers.sambanova import read_section_report

        return read_section_report(path, root)
    from pytest_genai.dabench.readers.graphcore import read_popvision

    return read_popvision(path)


def execution_profile_path(root: str | Path, cfg: DecoderConfig) -> Path:
    """Where the IPU execution profile of ``cfg`` is expected: ``<root>/ipu/<cfg.id>/execution/profile.pop``."""
    return Path(root) / "ipu" / cfg.id / EXECUTION_DIR / PROFILE_FILES["ipu"]


def read_execution_profile(root: str | Path, cfg: DecoderConfig) -> Any:
    """The measured cycles (:class:`~pytest_genai.dabench.readers.graphcore.ExecutionCycles`) of ``cfg``'s IPU
    execution profile; VendorUnavailable naming the path and how to produce it when there is none."""
    path = execution_profile_path(root, cfg)
    if not path.exists():
        raise VendorUnavailable(f"no IPU execution profile for {cfg.id} at {path}: {PROFILE_HOWTO['ipu-execution']} "
                                "(docs/dabench.md)")
    from pytest_genai.dabench.readers.graphcore import read_execution_profile as read

    return read(path)


@dataclasses.dataclass(frozen=True)
class VendorRun:
    step_s: float | None  # median seconds of one step; None when the config did not compile or fit
    profile_file: Path | None
    failure: str | None = None  # "out_of_memory: ..." / "compile_failed: ...": a capacity result, not an error


def ipu_engine_options(report_dir: str | Path, *, execution_profile: bool = False) -> dict[str, str]:
    """PopVision auto-report options: the graph profile always; the execution profile only for a separate,
    untimed profiling run (``execution_profile=True``)."""
    options = {"autoReport.outputGraphProfile": "true", "autoReport.directory": str(report_dir)}
    if execution_profile:
        options["autoReport.outputExecutionProfile"] = "true"
    return options


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
    # Must be set before compilation; Poplar reads it when the engine is created. The graph profile only (tiles,
    # memory: what the reader takes): the execution profile instruments every step and would slow the timed calls.
    os.environ["POPLAR_ENGINE_OPTIONS"] = json.dumps(ipu_engine_options(report_dir))
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
    try:
        runner.compile(x)
    except Exception as exc:  # poptorch.Error and friends: Poplar's "Out of memory" is a capacity result
        from pytest_genai.dabench.capacity import failure_reason

        reason = failure_reason(f"{type(exc).__name__}: {exc}")
        if reason is None:
            raise
        return VendorRun(None, None, reason)
    runner(x)  # warm-up; PopTorch calls return host tensors, so each call is complete when it returns
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        runner(x)
        samples.append(time.perf_counter() - t0)
    pops = sorted(report_dir.rglob("profile.pop"), key=lambda p: p.stat().st_mtime)
    return VendorRun(statistics.median(samples), pops[-1] if pops else None)
