"""Level-2 runs on the dataflow chips, read from the vendors' run logs (one reader per vendor).

Paper B's Level 2 on those systems runs the vendors' own model zoos (Cerebras Model Zoo GPT-2, SambaFlow GPT-2,
PopTorch GPT-2 with layers-per-IPU layouts); their throughput lives in the console log. A run folder
``<profiles>/<kind>/level2/<run name>/`` holds:

* ``run.log`` -- the console output, read for the throughput (measured by the vendor's own code), and where the log
  states it, the chip count;
* ``run.toml`` -- the settings the run was launched with that its log does not state: ``precision``
  (``fp32``, ``fp16``, ``bf16`` or ``mixed``), ``chips`` (chips or replicas), ``layers``; optional ``batch``.
  A setting stated by both the log (or ``params.yaml``) and ``run.toml`` must agree;
* Cerebras only, optional: the Model Zoo ``params.yaml`` of the run (``model.num_hidden_layers``,
  ``model.mixed_precision``, ``runconfig.num_csx``, ``train_input.batch_size``).

Throughput, per vendor:

* ``wse`` (Cerebras Model Zoo): the ``GlobalRate=... samples/sec`` of the last ``| Train Device=CSX, Step=...``
  line (the run's average since the wafer was loaded; ``Rate`` is a smoothed local figure); chips from
  ``... execute using N CSX``.
* ``rdu`` (SambaFlow apps): the last ``throughput ... samples/s`` / ``samples_per_sec ...`` figure of the log (the
  summary the apps print with ``--measure-performance``). Assumed from SambaNova's tutorials, not checked against a
  public log: the pattern is kept loose (``throughput``/``samples_per_sec(ond)``, ``:`` or ``=``, ``samples/s[ec]``).
* ``ipu`` (PopTorch GPT-2 of Graphcore's examples): the median of the per-step ``throughput: N samples/sec`` figures
  after the first step (which includes the graph load).

A log that reports an out-of-memory or compile failure is a result (``failure`` set, no throughput), not an error.
"""
from __future__ import annotations

import dataclasses
import re
import statistics
from pathlib import Path
from typing import Any

from pytest_genai.dabench.capacity import failure_reason
from pytest_genai.dabench.readers import LayoutError, parse_number

PRECISIONS = ("fp32", "fp16", "bf16", "mixed")
LOG_FILE, SETTINGS_FILE, CEREBRAS_PARAMS = "run.log", "run.toml", "params.yaml"

_NUM = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_CEREBRAS_TRAIN = re.compile(r"\|\s*Train Device=\w+, Step=(\d+),.*GlobalRate=" + _NUM + r" samples/sec")
_CEREBRAS_CSX = re.compile(r"execute using (\d+) CSX")
# "throughput: N samples/s[ec]" (the unit required: a tokens/s or ms/step figure on a throughput line is not one,
# nor a per-chip "samples/s/chip"), or a "[train[ing]_]samples_per_sec[ond]" key, whose name is the unit (not an
# "eval_samples_per_sec"); lines about evaluation or inference are not the training throughput (_SAMBA_OTHER)
_SAMBA_RATE = re.compile(r"throughput['\"]?\s*[:=]\s*" + _NUM + r"\s*samples?/s(?:ec(?:ond)?)?(?![\w/])"
                         r"|(?<!\w)(?:train(?:ing)?_)?samples_per_sec(?:ond)?['\"]?\s*[:=]\s*" + _NUM, re.I)
_SAMBA_OTHER = re.compile(r"\b(eval\w*|validation|valid|val|inference|infer|predict\w*|test)\b", re.I)
_POPTORCH_RATE = re.compile(r"throughput:\s*" + _NUM + r"\s*samples/sec", re.I)


@dataclasses.dataclass(frozen=True)
class VendorRunLog:
    """One Level-2 run on a dataflow system, as its log and settings state it."""

    kind: str
    name: str
    precision: str
    chips: int
    layers: int
    samples_per_s: float | None  # measured by the vendor's code; None when the run failed
    throughput_basis: str
    batch: int | None = None
    failure: str | None = None

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"run {self.name}: precision {self.precision!r} is not one of {PRECISIONS}")


def cerebras_throughput(text: str, source: str) -> tuple[float, dict[str, int]]:
    """GlobalRate of the last Train line, and the chip count when the log states it."""
    rates = [(int(m.group(1)), parse_number(m.group(2), field=f"{source}: GlobalRate"))
             for m in _CEREBRAS_TRAIN.finditer(text)]
    if not rates:
        raise LayoutError(source, None, "'| Train Device=CSX, Step=N, ..., GlobalRate=X samples/sec' lines "
                                        "(Cerebras Model Zoo training log)")
    stated = {}
    if m := _CEREBRAS_CSX.search(text):
        stated["chips"] = int(m.group(1))
    return rates[-1][1], stated


def sambaflow_throughput(text: str, source: str) -> tuple[float, dict[str, int]]:
    found = []
    for line in text.splitlines():
        for m in _SAMBA_RATE.finditer(line):
            if m.group(1) is not None and _SAMBA_OTHER.search(line[:m.start()]):
                continue  # "eval throughput: ...", "inference throughput: ..."
            found.append(parse_number(m.group(1) or m.group(2), field=f"{source}: throughput"))
    if not found:
        raise LayoutError(source, None, "a 'throughput: X samples/s' or 'samples_per_sec: X' line (SambaFlow "
                                        "app run with --measure-performance)")
    return found[-1], {}


def poptorch_throughput(text: str, source: str) -> tuple[float, dict[str, int]]:
    found = [parse_number(m.group(1), field=f"{source}: throughput") for m in _POPTORCH_RATE.finditer(text)]
    if not found:
        raise LayoutError(source, None, "per-step 'throughput: X samples/sec' lines (PopTorch GPT-2 training log)")
    if len(found) < 2:
        raise LayoutError(source, None, "two or more per-step 'throughput: X samples/sec' lines (the first step "
                                        "includes the graph load; run more steps)")
    return statistics.median(found[1:]), {}


READERS = {
    "wse": (cerebras_throughput, "GlobalRate of the last Train line (Cerebras Model Zoo log)"),
    "rdu": (sambaflow_throughput, "last throughput figure of the SambaFlow app log"),
    "ipu": (poptorch_throughput, "median per-step throughput after the first step (PopTorch log)"),
}


def _cerebras_params(folder: Path) -> dict[str, Any]:
    path = folder / CEREBRAS_PARAMS
    if not path.exists():
        return {}
    import yaml

    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise LayoutError(str(path), None, "a YAML Model Zoo params file", str(exc)) from None
    model, runconfig = params.get("model") or {}, params.get("runconfig") or {}
    out: dict[str, Any] = {}
    if "num_hidden_layers" in model:
        out["layers"] = int(model["num_hidden_layers"])
    if "mixed_precision" in model:
        # fp32 training is not possible on the WSE: without mixed precision the Model Zoo trains in fp16/bf16.
        out["precision"] = "mixed" if model["mixed_precision"] else {"bfloat16": "bf16"}.get(
            str(model.get("fp16_type", "float16")), "fp16")
    if "num_csx" in runconfig:
        out["chips"] = int(runconfig["num_csx"])
    if batch := (params.get("train_input") or {}).get("batch_size"):
        out["batch"] = int(batch)
    return out


def read_run(folder: str | Path, kind: str) -> VendorRunLog:
    """Read ``folder`` (``run.log`` + ``run.toml`` [+ ``params.yaml``]) as a ``kind`` Level-2 run."""
    from pytest_genai._toml import load_toml

    if kind not in READERS:
        raise ValueError(f"no Level-2 run-log reader for device kind {kind!r}; use one of {sorted(READERS)}")
    folder = Path(folder)
    log = folder / LOG_FILE
    if not log.exists():
        raise LayoutError(str(folder), None, f"a {LOG_FILE} (the run's console output) in the run folder")
    text = log.read_text(encoding="utf-8", errors="replace")
    settings_path = folder / SETTINGS_FILE
    given = load_toml(settings_path.read_text(encoding="utf-8"), str(settings_path)) if settings_path.exists() else {}
    reader, basis = READERS[kind]
    failure = failure_reason(text)
    stated: dict[str, Any] = {}
    rate = None
    if failure is None:
        rate, stated = reader(text, str(log))
    if kind == "wse":
        stated = {**_cerebras_params(folder), **stated}
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
        layers=int(merged["layers"]), samples_per_s=rate, throughput_basis=basis,
        batch=int(merged["batch"]) if merged.get("batch") is not None else None, failure=failure,
    )
