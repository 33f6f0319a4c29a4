"""Level-2 runs on the dataflow chips, read from the vendors' run logs (one reader per vendor).

Paper B's Level 2 on those systems runs the vendors' own model zoos (Cerebras Model Zoo GPT-2, SambaFlow GPT-2,
PopTorch GPT-2 with layers-per-IPU layouts); their throughput lives in the console log. A run folder
``<profiles>/<kind>/level2/<run name>/`` holds:

* ``run.log`` -- the console output, read for the throughput (measured by the vendor's own code), and where the log
  states it, the chip count;
* ``run.toml`` -- the settings the run was launched with that its log does not state: ``precision``
  (``fp32``, ``fp16``, ``bf16`` or ``mixed``), ``chips`` (chips or replicas), ``layers``; optional ``batch``.
  A setting stated by both the log (or the Model Zoo params) and ``run.toml`` must agree;
* Cerebras only, optional: the Model Zoo params of the run, ``params.yaml`` or ``trainer_params.yaml`` (one of the
  two), in either layout: R1.x-2.2 (``model.num_hidden_layers``, ``model.mixed_precision``, ``runconfig.num_csx``,
  ``train_input.batch_size``) or R2.3+ ``trainer:`` (``trainer.init.model.num_hidden_layers``,
  ``trainer.init.precision.enabled`` / ``fp16_type``, ``trainer.init.backend.cluster_config.num_csx``,
  ``trainer.fit.train_dataloader.batch_size``; the copy the Model Zoo writes to
  ``model_dir/cerebras_logs/<time>/trainer_params.yaml``). A file in neither layout, or a ``trainer:`` list of
  several phases, is refused by name, never read as no settings.

Throughput, per vendor, and the statistic it is (``VendorRunLog.throughput_statistic``, also in ``throughput_basis``):

* ``wse`` (Cerebras Model Zoo): the ``GlobalRate=... samples/sec`` of the last ``| Train Device=CSX, Step=...`` line
  (R1.9 PyTorch-appliance logs print ``Device=xla:0``), the run's average since the wafer was loaded (``Rate`` is a
  smoothed local figure): ``last_line``. Only a run the log says completed (``Training completed successfully``)
  has a throughput. Chips from ``... execute using N CSX``.
* ``rdu`` (SambaFlow apps): with one ``e2e samples_per_sec: X`` line per data-parallel instance (ALCF's SN30 guide:
  ``--data-parallel``, one line per instance at the end of the log) the instances' sum, ``sum_over_instances``, the
  system's throughput; their mean, which ALCF's guide reports, is kept as ``samples_per_s_instance_mean``, with the
  instance count. Otherwise the last ``throughput ... samples/s`` / ``samples_per_sec ...`` figure (the summary the
  apps print with ``--measure-performance``): ``last_line``; that pattern is kept loose (``throughput`` /
  ``samples_per_sec(ond)``, ``:`` or ``=``, ``samples/s[ec]``).
* ``ipu`` (PopTorch GPT-2 of Graphcore's examples): the median of the per-step ``throughput: N samples/sec`` figures
  after the first step (which includes the graph load): ``median_after_first_step``.

A log that reports an out-of-memory, capacity or compile failure is a result (``failure`` set, no throughput), not
an error. A run that did not complete for another reason -- interrupted or cancelled, a checkpoint already at its
max step, an environment that failed to install, an exception -- is refused with :class:`RunFailed` naming the line
the log states it on; it is never read as a throughput.
"""
from __future__ import annotations

import dataclasses
import re
import statistics
from pathlib import Path
from typing import Any

from pytest_genai.dabench.capacity import failure_reason
from pytest_genai.dabench.readers import LayoutError, RunFailed, parse_number, read_vendor_text

PRECISIONS = ("fp32", "fp16", "bf16", "mixed")
LOG_FILE, SETTINGS_FILE = "run.log", "run.toml"
CEREBRAS_PARAMS = ("params.yaml", "trainer_params.yaml")

_NUM = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
# "Device=CSX" (appliance R2.x), "Device=xla:0" (PyTorch appliance R1.9)
_CEREBRAS_TRAIN = re.compile(r"\|\s*Train Device=[\w:]+, Step=(\d+),.*GlobalRate=" + _NUM + r" samples/sec")
_CEREBRAS_DONE = re.compile(r"Training completed successfully")
_CEREBRAS_CSX = re.compile(r"execute using (\d+) CSX")
# "throughput: N samples/s[ec]" (the unit required: a tokens/s or ms/step figure on a throughput line is not one,
# nor a per-chip "samples/s/chip"), or a "[train[ing]_]samples_per_sec[ond]" key, whose name is the unit (not an
# "eval_samples_per_sec"); lines about evaluation or inference are not the training throughput (_SAMBA_OTHER)
_SAMBA_RATE = re.compile(r"throughput['\"]?\s*[:=]\s*" + _NUM + r"\s*samples?/s(?:ec(?:ond)?)?(?![\w/])"
                         r"|(?<!\w)(?:train(?:ing)?_)?samples_per_sec(?:ond)?['\"]?\s*[:=]\s*" + _NUM, re.I)
_SAMBA_OTHER = re.compile(r"\b(eval\w*|validation|valid|val|inference|infer|predict\w*|test)\b", re.I)
# the end-of-run line each SambaFlow app instance prints ("inner train loop time : ... e2e samples_per_sec: X")
_SAMBA_E2E = re.compile(r"\be2e samples_per_sec:\s*" + _NUM)
_POPTORCH_RATE = re.compile(r"throughput:\s*" + _NUM + r"\s*samples/sec", re.I)

#: Why a run stopped without a throughput, as logs state it (first kind found wins): (kind, pattern, what to do).
STOPPED = (
    ("already_at_max_steps", re.compile(r"already exceeds max step|already (reached|at) (its |the )?max(imum)?"
                                        r"[ _]steps?", re.I),
     "the checkpoint it resumed from is already at max_steps, so it never trained: raise max_steps or use a fresh "
     "model_dir, and rerun"),
    ("environment_not_installed", re.compile(r"Failed to build installable wheels|ERROR: Could not install packages|"
                                             r"ModuleNotFoundError: No module named", re.I),
     "the run's Python environment did not install, so it never trained: fix the environment (pip's error is "
     "above this line in the log) and rerun"),
    ("interrupted", re.compile(r"^\s*KeyboardInterrupt\b|\bJob \S+ was cancelled\b|\bcancelled by user\b|"
                               r"\b(received|caught) (signal )?SIG(INT|TERM)\b", re.I),
     "the run was stopped before it completed: its throughput so far is not the run's; rerun it to the end"),
    ("exception", re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception)\b(?::|$)"),
     "the run ended on this exception (the traceback above it in the log says where): fix it and rerun"),
)


@dataclasses.dataclass(frozen=True)
class VendorRunLog:
    """One Level-2 run on a dataflow system, as its log and settings state it.

    ``throughput_statistic`` names how ``samples_per_s`` was taken from the log (``last_line``,
    ``median_after_first_step``, ``sum_over_instances``); ``instances``: the data-parallel instances whose lines were
    combined (1 otherwise); ``samples_per_s_instance_mean``: their mean, where there were several.
    """

    kind: str
    name: str
    precision: str
    chips: int
    layers: int
    samples_per_s: float | None  # measured by the vendor's code; None when the run failed
    throughput_basis: str
    batch: int | None = None
    failure: str | None = None
    throughput_statistic: str | None = None
    instances: int = 1
    samples_per_s_instance_mean: float | None = None

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"run {self.name}: precision {self.precision!r} is not one of {PRECISIONS}")


@dataclasses.dataclass(frozen=True)
class Throughput:
    """What a vendor log gives: the figure, its statistic (and how it was read, in words), the settings the log
    states, and the 1-based line after which the run's own figures end (a stop after it means the run did not
    complete)."""

    samples_per_s: float
    statistic: str
    basis: str
    stated: dict[str, int]
    last_line: int
    instances: int = 1
    instance_mean: float | None = None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def stop_reason(text: str, after_line: int = 0) -> tuple[int, str, str, str] | None:
    """(line, kind, the log's line, what to do) for the first way a run stopped that ``text`` states after
    ``after_line`` (:data:`STOPPED`, first kind found wins), else None."""
    lines = text.splitlines()
    for kind, pattern, fix in STOPPED:
        for number, line in enumerate(lines[after_line:], start=after_line + 1):
            if pattern.search(line):
                return number, kind, line.strip(), fix
    return None


def cerebras_throughput(text: str, source: str) -> Throughput:
    """GlobalRate of the last Train line of a completed run, and the chip count when the log states it."""
    rates = [(m, int(m.group(1)), parse_number(m.group(2), field=f"{source}: GlobalRate"))
             for m in _CEREBRAS_TRAIN.finditer(text)]
    done = _CEREBRAS_DONE.search(text)
    if not done:
        last_step = f"its last Train line is step {rates[-1][1]}" if rates else "it has no Train line"
        stopped = stop_reason(text)
        if stopped is not None:
            number, kind, line, fix = stopped
            raise RunFailed(source, number, f"{kind} ({last_step})", line, fix)
        if rates:
            line = _line_of(text, rates[-1][0].start())
            raise RunFailed(source, line, f"a run without 'Training completed successfully' ({last_step})",
                            "", "the log ends before the run completed (cut short, or the run still going): "
                                "copy the whole log of a finished run")
    if not rates:
        raise LayoutError(source, None, "'| Train Device=CSX, Step=N, ..., GlobalRate=X samples/sec' lines "
                                        "(Cerebras Model Zoo training log)")
    stated = {}
    if m := _CEREBRAS_CSX.search(text):
        stated["chips"] = int(m.group(1))
    step, rate = rates[-1][1], rates[-1][2]
    return Throughput(rate, "last_line", f"GlobalRate of the last Train line (step {step}; Cerebras Model Zoo log)",
                      stated, _line_of(text, done.start()))


def sambaflow_throughput(text: str, source: str) -> Throughput:
    e2e = [(m, parse_number(m.group(1), field=f"{source}: e2e samples_per_sec")) for m in _SAMBA_E2E.finditer(text)]
    if len(e2e) >= 2:
        values = [v for _, v in e2e]
        mean = sum(values) / len(values)
        return Throughput(sum(values), "sum_over_instances",
                          f"sum over {len(values)} data-parallel instances of their 'e2e samples_per_sec' lines "
                          f"(SambaFlow app log; their mean, ALCF's SN30 figure: {mean:.6g})",
                          {}, _line_of(text, e2e[-1][0].start()), instances=len(values), instance_mean=mean)
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for m in _SAMBA_RATE.finditer(line):
            if m.group(1) is not None and _SAMBA_OTHER.search(line[:m.start()]):
                continue  # "eval throughput: ...", "inference throughput: ..."
            found.append((number, parse_number(m.group(1) or m.group(2), field=f"{source}: throughput")))
    if not found:
        raise LayoutError(source, None, "a 'throughput: X samples/s' or 'samples_per_sec: X' line (SambaFlow "
                                        "app run with --measure-performance)")
    return Throughput(found[-1][1], "last_line", "last throughput figure of the SambaFlow app log", {}, found[-1][0])


def poptorch_throughput(text: str, source: str) -> Throughput:
    found = [(m, parse_number(m.group(1), field=f"{source}: throughput")) for m in _POPTORCH_RATE.finditer(text)]
    if not found:
        raise LayoutError(source, None, "per-step 'throughput: X samples/sec' lines (PopTorch GPT-2 training log)")
    if len(found) < 2:
        raise LayoutError(source, None, "two or more per-step 'throughput: X samples/sec' lines (the first step "
                                        "includes the graph load; run more steps)")
    return Throughput(statistics.median(v for _, v in found[1:]), "median_after_first_step",
                      f"median of {len(found) - 1} per-step throughputs after the first step (PopTorch log)", {},
                      _line_of(text, found[-1][0].start()))


READERS = {"wse": cerebras_throughput, "rdu": sambaflow_throughput, "ipu": poptorch_throughput}
FAILED_BASIS = "none: the log reports a memory, capacity or compile failure (see failure)"


def _dig(params: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(params, dict) or key not in params:
            return None
        params = params[key]
    return params


def _precision(mixed: Any, fp16_type: Any, source: str) -> str:
    """Model Zoo precision: mixed when enabled; else the 16-bit type (fp32 training is not possible on the WSE:
    without mixed precision the Model Zoo trains in fp16/bf16)."""
    if mixed:
        return "mixed"
    half = {"float16": "fp16", "bfloat16": "bf16"}.get(str(fp16_type or "float16"))
    if half is None:
        raise LayoutError(source, None, "fp16_type float16 or bfloat16 when mixed precision is off",
                          f"fp16_type: {fp16_type}", hint="set precision in run.toml for this run")
    return half


def cerebras_params(folder: Path, root: str | Path | None = None) -> dict[str, Any]:
    """The settings the run's Model Zoo params state (``params.yaml`` or ``trainer_params.yaml`` in ``folder``; {} when
    there is neither): ``layers``, ``precision``, ``chips``, ``batch``. A file in no known layout, or one that states
    none of them, is a :class:`LayoutError` naming it."""
    present = [folder / name for name in CEREBRAS_PARAMS if (folder / name).exists()]
    if not present:
        return {}
    if len(present) > 1:
        raise LayoutError(str(folder), None, "one Model Zoo params file", " and ".join(p.name for p in present),
                          hint="keep the one the run was launched with")
    path = present[0]
    import yaml

    try:
        params = yaml.safe_load(read_vendor_text(path, root)) or {}
    except yaml.YAMLError as exc:
        raise LayoutError(str(path), None, "a YAML Model Zoo params file", str(exc)) from None
    if not isinstance(params, dict):
        raise LayoutError(str(path), None, "a YAML mapping of Model Zoo params", type(params).__name__)
    out: dict[str, Any] = {}
    if "trainer" in params:
        trainer = params["trainer"]
        if isinstance(trainer, list):
            raise LayoutError(str(path), None, "one trainer (trainer: init/fit)", f"a list of {len(trainer)} "
                              "trainer phases", hint="give each phase its own run folder with its own params")
        init, fit = _dig(trainer, "init") or {}, _dig(trainer, "fit") or {}
        model, precision = _dig(init, "model") or {}, _dig(init, "precision") or {}
        if not (init or fit):
            raise LayoutError(str(path), None, "trainer.init / trainer.fit (Model Zoo R2.3+ trainer params)",
                              ", ".join(map(str, trainer)) if isinstance(trainer, dict) else str(trainer))
        if "num_hidden_layers" in model:
            out["layers"] = int(model["num_hidden_layers"])
        mixed = precision.get("enabled", model.get("mixed_precision"))
        if mixed is not None:
            out["precision"] = _precision(mixed, precision.get("fp16_type", model.get("fp16_type")), str(path))
        csx = _dig(init, "backend", "cluster_config", "num_csx") or _dig(init, "backend", "num_csx")
        if csx:
            out["chips"] = int(csx)
        if batch := _dig(fit, "train_dataloader", "batch_size"):
            out["batch"] = int(batch)
    elif {"model", "runconfig", "train_input"} & set(params):
        model, runconfig = params.get("model") or {}, params.get("runconfig") or {}
        if "num_hidden_layers" in model:
            out["layers"] = int(model["num_hidden_layers"])
        if "mixed_precision" in model:
            out["precision"] = _precision(model["mixed_precision"], model.get("fp16_type"), str(path))
        if "num_csx" in runconfig:
            out["chips"] = int(runconfig["num_csx"])
        if batch := (params.get("train_input") or {}).get("batch_size"):
            out["batch"] = int(batch)
    else:
        raise LayoutError(str(path), None, "Model Zoo params: 'trainer:' (R2.3+) or model / runconfig / "
                          "train_input (R1.x-2.2)", ", ".join(map(str, params)))
    if not out:
        raise LayoutError(str(path), None, "num_hidden_layers, mixed precision, num_csx or batch_size in its "
                          "Model Zoo params", hint="the file states none of the settings read: give them in run.toml "
                          "and leave this file out")
    return out


def read_run(folder: str | Path, kind: str, root: str | Path | None = None) -> VendorRunLog:
    """Read ``folder`` (``run.log`` + ``run.toml`` [+ ``params.yaml`` or ``trainer_params.yaml``]) as a ``kind``
    Level-2 run: a completed run with its throughput, or one that failed to fit or build (``failure``); a run that
    did not complete otherwise raises :class:`RunFailed`, a file in an unknown layout :class:`LayoutError`."""
    from pytest_genai._toml import load_toml

    if kind not in READERS:
        raise ValueError(f"no Level-2 run-log reader for device kind {kind!r}; use one of {sorted(READERS)}")
    folder = Path(folder)
    log = folder / LOG_FILE
    if not log.exists():
        raise LayoutError(str(folder), None, f"a {LOG_FILE} (the run's console output) in the run folder")
    text = read_vendor_text(log, root, lenient=True)
    settings_path = folder / SETTINGS_FILE
    given = load_toml(read_vendor_text(settings_path, root), str(settings_path)) if settings_path.exists() else {}
    failure = failure_reason(text)
    stated: dict[str, Any] = {}
    read: Throughput | None = None
    if failure is None:
        read = READERS[kind](text, str(log))
        stated = read.stated
        # the wse reader requires the completion line; elsewhere a stop after the run's last figure means the
        # figures are of a run that did not complete -- and with several instances, a stop anywhere: an instance that
        # died before the others printed theirs would leave a sum over fewer instances
        after = 0 if read.instances > 1 else read.last_line
        if kind != "wse" and (stopped := stop_reason(text, after)) is not None:
            number, why, line, fix = stopped
            raise RunFailed(str(log), number, why, line, fix)
    if kind == "wse":
        stated = {**cerebras_params(folder, root), **stated}
    merged = dict(given)
    for key, value in stated.items():
        if key in given and given[key] != value:
            raise LayoutError(str(settings_path), None, f"{key} = {value!r} as the run's own files state it",
                              f"{key} = {given[key]!r}")
        merged[key] = value
    for key in ("precision", "chips", "layers"):
        if key not in merged:
            raise LayoutError(str(settings_path), None, f"a '{key}' setting (the log does not state it)")
    return VendorRunLog(
        kind=kind, name=folder.name, precision=str(merged["precision"]), chips=int(merged["chips"]),
        layers=int(merged["layers"]), samples_per_s=None if read is None else read.samples_per_s,
        throughput_basis=FAILED_BASIS if read is None else read.basis,
        batch=int(merged["batch"]) if merged.get("batch") is not None else None, failure=failure,
        throughput_statistic=None if read is None else read.statistic,
        instances=1 if read is None else read.instances,
        samples_per_s_instance_mean=None if read is None else read.instance_mean,
    )
