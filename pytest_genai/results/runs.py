"""pytest-benchmark JSON runs (``extra_info["genai"]``, else timing only) as validated, immutable records. An unusable
file raises :class:`ReportInputError` naming it; a bad single value is a :attr:`Run.warnings` entry, hiding nothing."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from pytest_genai import SCHEMA  # the version of the JSON contract this package reads
from pytest_genai.identity import merge_environment, split_config, split_model

from .errors import ReportInputError
from .measurement import Measurement
from .renames import current_names

BENCH_MEDIAN_METRIC = "benchmark_median_s"  # pytest-benchmark's own median round time (``stats.median``)
# pytest-benchmark's round-time statistics that ``--benchmark-compare-fail field:N%`` accepts (seconds)
BENCH_STATS_FIELDS = ("min", "max", "mean", "median", "stddev", "iqr")
MAX_DEPTH = 64  # deepest nesting of arrays/objects a run file may have (pytest-benchmark JSON needs fewer than ten)
_REWRITE = "pass the file exactly as pytest --benchmark-json wrote it"
# extra_info.genai's container fields and their empty value: the recorder writes them, a reader checks their type
GENAI_CONTAINERS: Mapping[str, Any] = {"config": {}, "environment": {}, "labels": {}, "attachments": {}, "claims": []}


def bench_stat_metric(field: str) -> str:
    """The metric name of a pytest-benchmark statistic: ``median`` → ``benchmark_median_s``."""
    return f"benchmark_{field}_s"


@dataclass(frozen=True)
class DeviceRef:
    """The device a benchmark ran on, as recorded in the JSON contract."""

    kind: str
    generation: str
    name: str = ""

    @property
    def label(self) -> str:
        return self.generation if self.generation == self.kind else f"{self.kind}:{self.generation}"


@dataclass(frozen=True)
class Record:
    """One benchmark of one run, read from the JSON contract."""

    name: str
    fullname: str
    experiment: str | None
    device: DeviceRef | None
    model: str | None
    config: Mapping[str, Any]  # what the workload is (:func:`pytest_genai.identity.split_config`)
    metrics: Mapping[str, float]
    sources: Mapping[str, str] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    claims: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    attachments: Mapping[str, Any] = field(default_factory=dict)
    param: str | None = None
    # environment: where and how it ran (paths, threads, ...), shown when two runs differ, never matched on; timing:
    # pytest-benchmark's round-time statistics (s; all but the median compared only where a threshold names them);
    # rounds: each round's value (``metric_rounds``, ``stats.data``); intervals: a metric's own (``metric_intervals``);
    # run_rounds: a baseline of several runs (``last:5``): each run's rounds (else its one value), newest first
    environment: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, float] = field(default_factory=dict)
    rounds: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    run_rounds: Mapping[str, tuple[tuple[float, ...], ...]] = field(default_factory=dict)

    @property
    def config_key(self) -> str:
        """Canonical text of the config's identity (sorted keys, whole floats as ints): matches across runs."""
        return json.dumps(_same_numbers(self.config), sort_keys=True, separators=(",", ":"), default=str)

    @property
    def key(self) -> tuple[str, str, str]:
        """Matching key across runs: (experiment, config identity, model); a plain pytest-benchmark test's node id."""
        if self.experiment is None:
            base = (self.fullname or self.name).split("[", 1)[0]
            return ("pytest-benchmark:" + base, self.param or "", "")
        return (self.experiment, self.config_key, self.model or "")

    @property
    def label(self) -> str:
        """Short human-readable name: the test's name (with its parameter id)."""
        return self.name

    @property
    def model_label(self) -> str:
        """The model as a person reads it: :func:`model_label`."""
        return model_label(self.model, self.config)

    def measurement(self, name: str) -> Measurement | None:
        """Metric ``name`` with its source, unit, rounds and interval (its ``(lo, hi)``); None where not recorded."""
        maps = (self.sources, self.units, self.rounds, self.intervals)
        return Measurement(self.metrics[name], *(m.get(name) for m in maps)) if name in self.metrics else None


def model_label(model: str | None, config: Mapping[str, Any]) -> str:
    """``llama-3.1-8b (tiny random)``: a model that ran random weights says so, with its scale (``full`` reads
    ``full-size``); ``—`` for none. Display only: the recorded name stays the matching key."""
    if not model or config.get("weights") != "random":
        return model or "—"
    scale = config.get("scale")
    return f"{model} ({'full-size' if scale == 'full' else scale} random)" if isinstance(scale, str) else (
        f"{model} (random)")


def config_value_label(key: str, value: Any) -> Any:
    """A config value as tables and plots show it: LoRA settings as ``lora r16`` (no adapters: ``full``)."""
    if key == "lora":
        if value is None:
            return "full"
        if isinstance(value, Mapping) and "rank" in value:
            return f"lora r{value['rank']}"
    return value


def _same_numbers(obj: Any) -> Any:
    """``obj`` with whole-valued floats as ints: ``1.0`` from another writer is the same workload as ``1``."""
    if isinstance(obj, float) and math.isfinite(obj) and obj.is_integer():
        return int(obj)
    if isinstance(obj, dict):
        return {k: _same_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_same_numbers(v) for v in obj]
    return obj


@dataclass(frozen=True)
class Run:
    """A whole run file: its records, the devices the session detected, and non-fatal warnings."""

    source: str
    records: tuple[Record, ...]
    devices: tuple[Mapping[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    datetime: str | None = None
    # device kinds the session did not find, with the probe's reason (``machine_info.genai.absent``)
    absent: Mapping[str, str] = field(default_factory=dict)
    stack: Mapping[str, Any] = field(default_factory=dict)  # the software stack used (``machine_info.genai.stack``)
    commit: Mapping[str, Any] = field(default_factory=dict)  # pytest-benchmark's ``commit_info`` (id, branch, dirty)

    @property
    def generations(self) -> tuple[str, ...]:
        """Device generations the run's benchmarks ran on, in first-seen order."""
        return tuple(dict.fromkeys(rec.device.generation for rec in self.records if rec.device is not None))


def _need(ok: Any, message: str) -> None:
    """Raise :class:`ReportInputError` with ``message`` unless ``ok``."""
    if not ok:
        raise ReportInputError(message)


def _of(obj: Any, key: str, kind: type | tuple[type, ...] = object, empty: Any = None) -> Any:
    """``obj[key]`` where ``obj`` is a mapping and that a ``kind``, else ``empty``: for the optional parts of a file."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, kind) else empty


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read and validate one run file; raises :class:`ReportInputError` naming the file on any fatal problem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ReportInputError(f"{p}: no such file (pass the JSON written by pytest --benchmark-json)") from None
    except IsADirectoryError:
        raise ReportInputError(f"{p}: is a directory, not a JSON file (pass the file written by --benchmark-json)") from None
    except OSError as exc:
        raise ReportInputError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    return run_from_bytes(raw, p)


def run_from_bytes(raw: bytes, p: str | os.PathLike[str]) -> Run:
    """:func:`load_run` of a file's bytes already read (a pipe or ``<(...)`` can be read only once)."""
    p = Path(p)
    _need(raw.strip(), f"{p}: the file is empty (was the pytest run interrupted before it wrote its JSON?)")
    try:
        obj = json.loads(raw.decode("utf-8-sig"))  # a UTF-8 byte-order mark (Windows editors, PowerShell) is accepted
    except UnicodeDecodeError as exc:
        raise ReportInputError(f"{p}: not UTF-8 text (byte {exc.start}); pass the JSON written by --benchmark-json") from None
    except json.JSONDecodeError as exc:
        body = exc.doc.strip()
        hint = ("it is not JSON; pass the file written by pytest --benchmark-json" if not body.startswith(("{", "["))
                else "the file ends early — it looks truncated (was the run interrupted, or the disk full?)"
                if exc.pos >= len(body) - 1 or exc.msg.startswith("Unterminated string") else
                f"the JSON is malformed; {_REWRITE}")
        raise ReportInputError(f"{p}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}): {hint}") from None
    except RecursionError:
        raise ReportInputError(f"{p}: the JSON is nested too deeply to read; {_REWRITE}") from None
    except MemoryError:
        raise ReportInputError(f"{p}: the JSON is too large to load into memory ({len(raw):,} bytes)") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's int/str conversion limit
        raise ReportInputError(f"{p}: invalid JSON ({exc}); {_REWRITE}") from None
    return run_from_json(obj, str(p))


def _check_depth(obj: Any, source: str) -> None:
    """Refuse absurdly nested documents up front, iteratively, so no later step recurses into them."""
    stack: list[tuple[Any, int, str]] = [(obj, 1, "")]
    while stack:
        node, depth, where = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise ReportInputError(f"{source}: the JSON is nested more than {MAX_DEPTH} levels deep (at "
                                   f"{where.lstrip('.') or 'top level'}); {_REWRITE}")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((v, depth + 1, f"{where}.{k}" if isinstance(node, dict) else f"{where}[{k}]") for k, v in items)


def run_from_json(obj: Any, source: str) -> Run:
    """Validate an already-parsed pytest-benchmark JSON document (``source`` names it in messages)."""
    _need(isinstance(obj, dict), f"{source}: top level is a JSON {type(obj).__name__}, expected an object with a "
                                 "'benchmarks' list (pytest-benchmark JSON)")
    _need("benchmarks" in obj, f"{source}: no 'benchmarks' list — this is not pytest-benchmark JSON (write it with "
                               "pytest --benchmark-json FILE)")
    benchmarks = obj["benchmarks"]
    _need(isinstance(benchmarks, list), f"{source}: 'benchmarks' is a {type(benchmarks).__name__}, expected a list")
    _check_depth(obj, source)
    warnings: list[str] = []
    records = tuple(records_from_benchmarks(benchmarks, source, warnings))
    info = _of(_of(obj, "machine_info"), "genai", dict, {})
    devices = tuple(d for d in _of(info, "devices", list, []) if isinstance(d, dict))
    absent = {str(k): str(v) for k, v in _of(info, "absent", dict, {}).items()}
    return Run(source, records, devices, tuple(warnings), _of(obj, "datetime", str, None), absent,
               _of(info, "stack", dict, {}), _of(obj, "commit_info", dict, {}))


def records_from_benchmarks(benchmarks: Iterable[Any], source: str, warnings: list[str] | None = None) -> list[Record]:
    """Turn pytest-benchmark "benchmarks" entries into :class:`Record`; ``warnings`` collects non-fatal problems."""
    return [_record(bench, source, i, [] if warnings is None else warnings) for i, bench in enumerate(benchmarks)]


def _record(bench: Any, source: str, index: int, warnings: list[str]) -> Record:
    at = f"{source}: benchmark #{index}"
    _need(isinstance(bench, dict), f"{at}: is a JSON {type(bench).__name__}, expected an object")
    name = bench.get("name")
    _need(isinstance(name, str) and name, f"{at}: has no 'name' string (not pytest-benchmark JSON?)")
    where = f"{source}: benchmark {name!r}"
    extra = bench.get("extra_info") or {}
    _need(isinstance(extra, dict), f"{where}: 'extra_info' is a {type(extra).__name__}, expected an object")
    stats = _of(bench, "stats", dict, {})  # its numeric BENCH_STATS_FIELDS (others are ignored)
    timing = {n: t for n in BENCH_STATS_FIELDS if (t := json_float(stats.get(n))) is not None}
    median = timing.get("median")
    bench_rounds = _round_list(stats.get("data")) if median is not None else None
    common = dict(name=name, fullname=str(bench.get("fullname", name)), timing=timing, param=_of(bench, "param", str))
    genai = extra.get("genai")
    if genai is None:  # a plain pytest-benchmark test: its median round time is its one metric
        return Record(experiment=None, device=None, model=None, config={}, **common,
                      **metrics_from_json({"metrics": {}}, where, warnings, median, bench_rounds))
    g = f"{where}: extra_info.genai"
    _need(isinstance(genai, dict), f"{g} is a {type(genai).__name__}, expected an object")
    schema = genai.get("schema")
    shown = "no 'schema' field" if schema is None else f"schema {schema!r}"
    _need(schema == SCHEMA, f"{g} has {shown}, but this pytest-genai reads {SCHEMA!r} — regenerate the file with "
                            "this version of pytest-genai, or read it with the version that wrote it")
    experiment, model = genai.get("experiment"), genai.get("model")
    _need(isinstance(experiment, str) and experiment, f"{g}.experiment must be a non-empty string, got {experiment!r}")
    device = _device(genai.get("device"), g)
    _need(model is None or isinstance(model, str), f"{g}.model must be a string or null, got {model!r}")
    part = {key: genai.get(key) or type(empty)() for key, empty in GENAI_CONTAINERS.items()}
    part["config"] = {} if genai.get("config") is None else genai["config"]  # a falsy non-object config is refused
    for key, value in part.items():
        listed = isinstance(GENAI_CONTAINERS[key], list)  # claims: a list of objects; the others one object
        ok = isinstance(value, list) and all(isinstance(c, dict) for c in value) if listed else isinstance(value, dict)
        _need(ok, f"{g}.{key} must be {'a list of objects' if listed else 'an object'}, got {type(value).__name__}")
    # split again on reading, so files written before a key was declared environment pair with new ones
    split = split_config(part["config"])
    model, model_env = split_model(model)
    return Record(experiment=experiment, device=device, model=model, config=split.identity,
                  claims=tuple(part["claims"]), labels=_strings(part["labels"], f"{g}.labels"),
                  attachments=part["attachments"],
                  environment=merge_environment(split.environment, model_env, part["environment"]),
                  **common, **metrics_from_json(genai, where, warnings, median, bench_rounds))


def metrics_json(measurements: Mapping[str, Measurement]) -> dict[str, dict[str, Any]]:
    """The JSON contract's per-metric objects (``metrics``, ``metric_units``, ...): the writer of what is read back."""
    return {"metrics": {n: m.value for n, m in measurements.items()},
            "metric_sources": {n: m.source for n, m in measurements.items()},
            "metric_units": {n: m.unit or "" for n, m in measurements.items()},
            "metric_rounds": {n: list(m.rounds) for n, m in measurements.items() if m.rounds is not None},
            "metric_intervals": {n: m.interval.to_json() for n, m in measurements.items() if m.interval is not None}}


def genai_of(bench: Any) -> dict[str, Any] | None:
    """The ``extra_info["genai"]`` object of a pytest-benchmark entry or ``benchmark`` fixture; None where none."""
    return _of(_of(bench, "extra_info") if isinstance(bench, Mapping) else getattr(bench, "extra_info", None), "genai",
               dict)


def benchmark_json(name: str, genai: Mapping[str, Any], fullname: str | None = None, **fields: Any) -> dict[str, Any]:
    """A pytest-benchmark entry carrying ``genai`` (``fields``: ``param``, ``stats``, ...)."""
    return {"name": name, "fullname": fullname or name, **fields, "extra_info": {"genai": genai}}


def recorded_metrics(genai: Mapping[str, Any]) -> dict[str, Measurement]:
    """Each metric of a genai object with its source and unit as written, unchecked: for the session's own checks."""
    sources, units = genai.get("metric_sources") or {}, genai.get("metric_units") or {}
    return {n: Measurement(v, sources.get(n), units.get(n)) for n, v in (genai.get("metrics") or {}).items()}


def recorded_spread(bench: Mapping[str, Any], name: str) -> tuple[Any, Any]:
    """Metric ``name``'s rounds and interval in a benchmark entry as written (``stats.data``: the median's)."""
    genai = genai_of(bench) or {}
    rounds = (_of(bench.get("stats"), "data") if name == BENCH_MEDIAN_METRIC else _of(genai.get("metric_rounds"), name))
    return rounds, _of(genai.get("metric_intervals"), name)


def metrics_from_json(genai: Mapping[str, Any], where: str, warnings: list[str], median: float | None,
                      bench_rounds: tuple[float, ...] | None) -> dict[str, Any]:
    """:class:`Record`'s metric fields from what :func:`metrics_json` wrote, plus the median time; renames applied."""
    g = f"{where}: extra_info.genai"
    if "metrics" not in genai:
        warnings.append(f"{g} has no 'metrics'; only its timing is compared")
    metrics = _numbers(genai.get("metrics") or {}, f"{g}.metrics", warnings)
    if median is not None:
        metrics.setdefault(BENCH_MEDIAN_METRIC, median)
    sources, units = (_strings(genai.get(key) or {}, f"{g}.{key}") for key in ("metric_sources", "metric_units"))
    metrics, sources, units = current_names(metrics, sources, units)  # runs written before a rename pair with new ones
    if median is not None:
        sources.setdefault(BENCH_MEDIAN_METRIC, "measured")
        units.setdefault(BENCH_MEDIAN_METRIC, "s")
    rounds = _kept(genai.get("metric_rounds"), metrics, _round_list)
    if bench_rounds and BENCH_MEDIAN_METRIC in metrics:
        rounds[BENCH_MEDIAN_METRIC] = bench_rounds
    return {"metrics": metrics, "sources": sources, "units": units, "rounds": rounds,
            "intervals": _kept(genai.get("metric_intervals"), metrics, interval_ends)}


def _kept(recorded: Any, metrics: Mapping[str, float], read: Callable[[Any], Any]) -> dict[str, Any]:
    """Each entry of ``recorded`` for a kept metric that ``read`` makes sense of (odd ones only withhold a verdict)."""
    pairs = recorded.items() if isinstance(recorded, dict) else ()
    return {str(name): got for name, value in pairs if name in metrics and (got := read(value))}


def json_float(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (a bool, a string, an integer too large for a float)."""
    try:
        return None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)
    except OverflowError:
        return None


def _round_list(value: Any) -> tuple[float, ...] | None:
    """Two or more finite numbers (a metric's rounds), else None: odd input is ignored here, never an error."""
    floats = [json_float(v) for v in value] if isinstance(value, list) and len(value) >= 2 else [None]
    return tuple(floats) if all(f is not None and math.isfinite(f) for f in floats) else None


def interval_ends(value: Any) -> tuple[float, ...] | None:
    """``(lo, hi)`` of a recorded interval, or None."""
    ends = _round_list([value.get("lo"), value.get("hi")]) if isinstance(value, dict) else None
    return ends if ends and ends[0] <= ends[1] else None


def _device(obj: Any, g: str) -> DeviceRef | None:
    if obj is None:  # genai.start(device=None): a benchmark not tied to a device
        return None
    _need(isinstance(obj, dict), f"{g}.device must be an object with 'kind' and 'generation'")
    for key in ("kind", "generation"):
        _need(isinstance(v := obj.get(key), str) and v, f"{g}.device.{key} must be a non-empty string, got {v!r}")
    return DeviceRef(kind=obj["kind"], generation=obj["generation"], name=str(obj.get("name") or ""))


def _numbers(obj: Any, where: str, warnings: list[str]) -> dict[str, float]:
    _need(isinstance(obj, dict), f"{where} must be an object of name → number, got {type(obj).__name__}")
    out: dict[str, float] = {}
    for key, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            warnings.append(f"{where}.{key} is {value!r}, not a number; ignored")
            continue
        if json_float(value) is None:
            raise ReportInputError(
                f"{where}.{key} is an integer of about {value.bit_length() * 3 // 10 + 1} digits, too large for a float; "
                "record it as a float (or in a larger unit) and regenerate the file")
        if not math.isfinite(value):
            warnings.append(f"{where}.{key} is {value} (not finite)")
        out[str(key)] = value
    return out


def _strings(obj: Any, where: str) -> dict[str, str]:
    _need(isinstance(obj, dict), f"{where} must be an object of name → string, got {type(obj).__name__}")
    return {str(k): str(v) for k, v in obj.items()}
