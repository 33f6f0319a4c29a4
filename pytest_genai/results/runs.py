"""Reading pytest-benchmark JSON runs into validated, immutable records.

A run file is pytest-benchmark JSON whose benchmarks carry ``extra_info["genai"]`` (contract ``pytest-genai/1``);
plain pytest-benchmark benchmarks keep only their timing. A problem that makes the file unusable raises
:class:`ReportInputError` naming the file; a bad single value becomes a :attr:`Run.warnings` entry, so one bad
entry does not hide the rest of a run.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_genai import SCHEMA  # the version of the JSON contract this package reads
from pytest_genai.identity import merge_environment, split_config, split_model

from .errors import ReportInputError
from .measurement import Measurement
from .renames import current_names

BENCH_MEDIAN_METRIC = "benchmark_median_s"
"""Name under which pytest-benchmark's own median round time (``stats.median``) is exposed."""

BENCH_STATS_FIELDS = ("min", "max", "mean", "median", "stddev", "iqr")
"""pytest-benchmark's round-time statistics that ``--benchmark-compare-fail field:N%`` accepts (seconds)."""


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
    config: Mapping[str, Any]
    """The benchmark's identity: what the workload is (:func:`pytest_genai.identity.split_config`)."""
    metrics: Mapping[str, float]
    sources: Mapping[str, str] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    claims: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    attachments: Mapping[str, Any] = field(default_factory=dict)
    param: str | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    """Where and how it ran (paths, threads, rank placement, ...): shown when two runs differ, never matched on."""
    timing: Mapping[str, float] = field(default_factory=dict)
    """pytest-benchmark's round-time statistics (``min``, ``mean``, ...; seconds); only the median is a metric of
    every comparison, the others are compared when a threshold names them (``mean:5%``)."""
    rounds: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """Every round's value of a metric, where the run recorded two or more (``metric_rounds``, ``stats.data``)."""
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """A metric's own interval where the run recorded one without rounds (``metric_intervals``)."""
    run_rounds: Mapping[str, tuple[tuple[float, ...], ...]] = field(default_factory=dict)
    """A baseline of several runs (``last:5``): each run's rounds of a metric (else its one value), newest first."""

    @property
    def config_key(self) -> str:
        """Canonical text of the config's identity (sorted keys, whole-valued floats as integers), used to match
        benchmarks across runs."""
        return json.dumps(_same_numbers(self.config), sort_keys=True, separators=(",", ":"), default=str)

    @property
    def key(self) -> tuple[str, str, str]:
        """Matching key across runs: (experiment, config identity, model), never the device or the environment; a
        plain pytest-benchmark test's is its node id, as pytest-benchmark pairs them."""
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


def model_label(model: str | None, config: Mapping[str, Any]) -> str:
    """``llama-3.1-8b (tiny random)``: a model that ran random weights says so, with its scale (``full`` reads
    ``full-size``); ``—`` for none. Display only: the recorded name stays the matching key."""
    if not model:
        return "—"
    if config.get("weights") != "random":
        return model
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
    absent: Mapping[str, str] = field(default_factory=dict)
    """Device kinds the session did not find, with the probe's reason (``machine_info.genai.absent``)."""
    stack: Mapping[str, Any] = field(default_factory=dict)
    """The software stack the run used (``machine_info.genai.stack``); empty where the file has none."""
    commit: Mapping[str, Any] = field(default_factory=dict)
    """pytest-benchmark's ``commit_info`` (``id``, ``branch``, ``dirty``); empty where the file has none."""

    @property
    def generations(self) -> tuple[str, ...]:
        """Device generations the run's benchmarks ran on, in first-seen order."""
        seen: dict[str, None] = {}
        for rec in self.records:
            if rec.device is not None:
                seen.setdefault(rec.device.generation, None)
        return tuple(seen)


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
    if not raw.strip():
        raise ReportInputError(f"{p}: the file is empty (was the pytest run interrupted before it wrote its JSON?)")
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark (Windows editors, PowerShell) is accepted
    except UnicodeDecodeError as exc:
        raise ReportInputError(f"{p}: not UTF-8 text (byte {exc.start}); pass the JSON written by --benchmark-json") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = _json_hint(text, exc)
        raise ReportInputError(f"{p}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}): {hint}") from None
    except RecursionError:
        raise ReportInputError(
            f"{p}: the JSON is nested too deeply to read; pass the file exactly as pytest --benchmark-json wrote it"
        ) from None
    except MemoryError:
        raise ReportInputError(f"{p}: the JSON is too large to load into memory ({len(raw):,} bytes)") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's int/str conversion limit
        raise ReportInputError(f"{p}: invalid JSON ({exc}); pass the file exactly as pytest --benchmark-json wrote it") from None
    return run_from_json(obj, str(p))


MAX_DEPTH = 64
"""Deepest nesting of arrays/objects a run file may have (pytest-benchmark JSON needs fewer than ten levels)."""


def _check_depth(obj: Any, source: str) -> None:
    """Refuse absurdly nested documents up front, iteratively, so no later step recurses into them."""
    stack: list[tuple[Any, int, str]] = [(obj, 1, "")]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, dict):
            children: Iterable[tuple[str, Any]] = ((f"{where}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            children = ((f"{where}[{i}]", v) for i, v in enumerate(node))
        else:
            continue
        if depth > MAX_DEPTH:
            raise ReportInputError(
                f"{source}: the JSON is nested more than {MAX_DEPTH} levels deep (at {where.lstrip('.') or 'top level'}); "
                "pass the file exactly as pytest --benchmark-json wrote it"
            )
        stack.extend((child, depth + 1, path) for path, child in children)


def _json_hint(text: str, exc: json.JSONDecodeError) -> str:
    body = text.strip()
    if not body.startswith(("{", "[")):
        return "it is not JSON; pass the file written by pytest --benchmark-json"
    if exc.pos >= len(body) - 1 or exc.msg.startswith("Unterminated string"):
        return "the file ends early — it looks truncated (was the run interrupted, or the disk full?)"
    return "the JSON is malformed; pass the file exactly as pytest --benchmark-json wrote it"


def run_from_json(obj: Any, source: str) -> Run:
    """Validate an already-parsed pytest-benchmark JSON document (``source`` names it in messages)."""
    if not isinstance(obj, dict):
        raise ReportInputError(
            f"{source}: top level is a JSON {type(obj).__name__}, expected an object with a 'benchmarks' list "
            "(pytest-benchmark JSON)"
        )
    if "benchmarks" not in obj:
        raise ReportInputError(
            f"{source}: no 'benchmarks' list — this is not pytest-benchmark JSON (write it with pytest --benchmark-json FILE)"
        )
    benchmarks = obj["benchmarks"]
    if not isinstance(benchmarks, list):
        raise ReportInputError(f"{source}: 'benchmarks' is a {type(benchmarks).__name__}, expected a list")
    _check_depth(obj, source)
    warnings: list[str] = []
    records = tuple(records_from_benchmarks(benchmarks, source, warnings))
    devices: tuple[Mapping[str, Any], ...] = ()
    absent: dict[str, str] = {}
    stack: dict[str, Any] = {}
    machine = obj.get("machine_info")
    if isinstance(machine, dict) and isinstance(machine.get("genai"), dict):
        found = machine["genai"].get("devices")
        if isinstance(found, list):
            devices = tuple(d for d in found if isinstance(d, dict))
        missing = machine["genai"].get("absent")
        if isinstance(missing, dict):
            absent = {str(k): str(v) for k, v in missing.items()}
        recorded = machine["genai"].get("stack")
        if isinstance(recorded, dict):
            stack = recorded
    when = obj.get("datetime")
    commit = obj.get("commit_info") if isinstance(obj.get("commit_info"), dict) else {}
    return Run(source, records, devices, tuple(warnings), when if isinstance(when, str) else None, absent, stack,
               commit)


def records_from_benchmarks(benchmarks: Iterable[Any], source: str, warnings: list[str] | None = None) -> list[Record]:
    """Turn pytest-benchmark "benchmarks" entries into :class:`Record`; ``warnings`` collects non-fatal problems."""
    sink = warnings if warnings is not None else []
    return [_record(bench, source, index, sink) for index, bench in enumerate(benchmarks)]


def _record(bench: Any, source: str, index: int, warnings: list[str]) -> Record:
    if not isinstance(bench, dict):
        raise ReportInputError(f"{source}: benchmark #{index}: is a JSON {type(bench).__name__}, expected an object")
    name = bench.get("name")
    fullname = bench.get("fullname", name)
    if not isinstance(name, str) or not name:
        raise ReportInputError(f"{source}: benchmark #{index}: has no 'name' string (not pytest-benchmark JSON?)")
    where = f"{source}: benchmark {name!r}"
    param = bench.get("param")
    extra = bench.get("extra_info") or {}
    if not isinstance(extra, dict):
        raise ReportInputError(f"{where}: 'extra_info' is a {type(extra).__name__}, expected an object")
    timing = _stats_times(bench.get("stats"))
    median = timing.get("median")
    stats = bench.get("stats")
    bench_rounds = _round_list(stats.get("data")) if isinstance(stats, dict) and median is not None else None
    genai = extra.get("genai")
    if genai is None:  # a plain pytest-benchmark test: its median round time is its one metric
        return Record(name=name, fullname=str(fullname), experiment=None, device=None, model=None, config={},
                      param=param if isinstance(param, str) else None, timing=timing,
                      **metrics_from_json({"metrics": {}}, where, warnings, median, bench_rounds))
    if not isinstance(genai, dict):
        raise ReportInputError(f"{where}: extra_info.genai is a {type(genai).__name__}, expected an object")
    schema = genai.get("schema")
    if schema != SCHEMA:
        shown = "no 'schema' field" if schema is None else f"schema {schema!r}"
        raise ReportInputError(
            f"{where}: extra_info.genai has {shown}, but this pytest-genai reads {SCHEMA!r} — "
            "regenerate the file with this version of pytest-genai, or read it with the version that wrote it"
        )
    experiment = genai.get("experiment")
    if not isinstance(experiment, str) or not experiment:
        raise ReportInputError(f"{where}: extra_info.genai.experiment must be a non-empty string, got {experiment!r}")
    device = _device(genai.get("device"), where)
    model = genai.get("model")
    if model is not None and not isinstance(model, str):
        raise ReportInputError(f"{where}: extra_info.genai.model must be a string or null, got {model!r}")
    config = genai.get("config", {})
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ReportInputError(f"{where}: extra_info.genai.config must be an object, got {type(config).__name__}")
    recorded_env = genai.get("environment") or {}
    if not isinstance(recorded_env, dict):
        raise ReportInputError(
            f"{where}: extra_info.genai.environment must be an object, got {type(recorded_env).__name__}")
    # split again on reading, so files written before a key was declared environment pair with new ones
    split = split_config(config)
    model, model_env = split_model(model)
    environment = merge_environment(split.environment, model_env, recorded_env)
    measured = metrics_from_json(genai, where, warnings, median, bench_rounds)
    claims = genai.get("claims") or []
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        raise ReportInputError(f"{where}: extra_info.genai.claims must be a list of objects")
    labels = _strings(genai.get("labels") or {}, f"{where}: extra_info.genai.labels")
    attachments = genai.get("attachments") or {}
    if not isinstance(attachments, dict):
        raise ReportInputError(f"{where}: extra_info.genai.attachments must be an object")
    return Record(name=name, fullname=str(fullname), experiment=experiment, device=device, model=model,
                  config=split.identity, claims=tuple(claims), labels=labels, attachments=attachments,
                  param=param if isinstance(param, str) else None, environment=environment, timing=timing, **measured)


def metrics_json(measurements: Mapping[str, Measurement]) -> dict[str, dict[str, Any]]:
    """The JSON contract's per-metric objects (``metrics``, ``metric_sources``, ``metric_units``, ``metric_rounds``,
    ``metric_intervals``) of a benchmark's measurements, each with its source and unit resolved: the one writer of
    what :func:`metrics_from_json` reads."""
    return {"metrics": {n: m.value for n, m in measurements.items()},
            "metric_sources": {n: m.source for n, m in measurements.items()},
            "metric_units": {n: m.unit or "" for n, m in measurements.items()},
            "metric_rounds": {n: list(m.rounds) for n, m in measurements.items() if m.rounds is not None},
            "metric_intervals": {n: m.interval.to_json() for n, m in measurements.items() if m.interval is not None}}


def genai_of(bench: Any) -> dict[str, Any] | None:
    """The ``extra_info["genai"]`` object of a pytest-benchmark entry (its JSON, or the ``benchmark`` fixture while it
    runs); None where it has none."""
    extra = bench.get("extra_info") if isinstance(bench, Mapping) else getattr(bench, "extra_info", None)
    genai = extra.get("genai") if isinstance(extra, Mapping) else None
    return genai if isinstance(genai, dict) else None


def benchmark_json(name: str, genai: Mapping[str, Any], fullname: str | None = None, **fields: Any) -> dict[str, Any]:
    """A pytest-benchmark entry carrying ``genai`` (``fields``: ``param``, ``stats``, ...), as
    :func:`records_from_benchmarks` reads it."""
    return {"name": name, "fullname": fullname or name, **fields, "extra_info": {"genai": genai}}


def recorded_metrics(genai: Mapping[str, Any]) -> dict[str, Measurement]:
    """Each metric of a genai object with its source and unit as written (None where none), unchecked and under the
    name it was recorded with: for the session's own checks and summary (reports read :func:`metrics_from_json`)."""
    sources, units = genai.get("metric_sources") or {}, genai.get("metric_units") or {}
    return {n: Measurement(v, sources.get(n), units.get(n)) for n, v in (genai.get("metrics") or {}).items()}


def recorded_spread(bench: Mapping[str, Any], name: str) -> tuple[Any, Any]:
    """Metric ``name``'s rounds and interval in a benchmark entry, as written (``stats.data`` are
    :data:`BENCH_MEDIAN_METRIC`'s rounds), for keeping verbatim; :func:`metrics_from_json` reads them checked."""
    genai, stats = genai_of(bench) or {}, bench.get("stats")
    rounds, intervals = genai.get("metric_rounds"), genai.get("metric_intervals")
    if name == BENCH_MEDIAN_METRIC:
        rounds = {name: stats.get("data")} if isinstance(stats, dict) else None
    return (rounds.get(name) if isinstance(rounds, dict) else None,
            intervals.get(name) if isinstance(intervals, dict) else None)


def metrics_from_json(genai: Mapping[str, Any], where: str, warnings: list[str], median: float | None,
                      bench_rounds: tuple[float, ...] | None) -> dict[str, Any]:
    """The :class:`Record` metric fields read from what :func:`metrics_json` wrote, with the median round time as
    :data:`BENCH_MEDIAN_METRIC` and retired names read as today's."""
    if "metrics" not in genai:
        warnings.append(f"{where}: extra_info.genai has no 'metrics'; only its timing is compared")
    metrics = _numbers(genai.get("metrics") or {}, f"{where}: extra_info.genai.metrics", warnings)
    if median is not None and BENCH_MEDIAN_METRIC not in metrics:
        metrics[BENCH_MEDIAN_METRIC] = median
    sources = _strings(genai.get("metric_sources") or {}, f"{where}: extra_info.genai.metric_sources")
    units = _strings(genai.get("metric_units") or {}, f"{where}: extra_info.genai.metric_units")
    metrics, sources, units = current_names(metrics, sources, units)  # runs written before a rename pair with new ones
    if median is not None:
        sources.setdefault(BENCH_MEDIAN_METRIC, "measured")
        units.setdefault(BENCH_MEDIAN_METRIC, "s")
    return {"metrics": metrics, "sources": sources, "units": units,
            "rounds": _metric_rounds(genai.get("metric_rounds"), metrics, bench_rounds),
            "intervals": _metric_intervals(genai.get("metric_intervals"), metrics)}


def _round_list(value: Any) -> tuple[float, ...] | None:
    """Two or more finite numbers (a metric's rounds), else None: odd input is ignored here, never an error."""
    if not isinstance(value, list) or len(value) < 2:
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        try:
            f = float(v)
        except OverflowError:
            return None
        if not math.isfinite(f):
            return None
        out.append(f)
    return tuple(out)


def _metric_rounds(recorded: Any, metrics: Mapping[str, float],
                   bench_rounds: tuple[float, ...] | None) -> dict[str, tuple[float, ...]]:
    """The rounds of the metrics this record kept (``metric_rounds``; ``stats.data`` for the median round time)."""
    out = {}
    if isinstance(recorded, dict):
        for name, value in recorded.items():
            these = _round_list(value)
            if these and name in metrics:
                out[str(name)] = these
    if bench_rounds and BENCH_MEDIAN_METRIC in metrics:
        out[BENCH_MEDIAN_METRIC] = bench_rounds
    return out


def _metric_intervals(recorded: Any, metrics: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """``(lo, hi)`` of each recorded interval; odd entries are ignored (an interval only ever withholds a verdict)."""
    out = {}
    if isinstance(recorded, dict):
        for name, value in recorded.items():
            ends = _round_list([value.get("lo"), value.get("hi")]) if isinstance(value, dict) else None
            if ends and name in metrics and ends[0] <= ends[1]:
                out[str(name)] = ends
    return out


def _stats_times(stats: Any) -> dict[str, float]:
    """The numeric :data:`BENCH_STATS_FIELDS` of a pytest-benchmark ``stats`` object (others are ignored)."""
    if not isinstance(stats, dict):
        return {}
    out: dict[str, float] = {}
    for name in BENCH_STATS_FIELDS:
        value = stats.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                out[name] = float(value)
            except OverflowError:  # an integer too large for a float: not a usable time
                pass
    return out


def _device(obj: Any, where: str) -> DeviceRef | None:
    if obj is None:  # genai.start(device=None): a benchmark not tied to a device
        return None
    if not isinstance(obj, dict):
        raise ReportInputError(f"{where}: extra_info.genai.device must be an object with 'kind' and 'generation'")
    kind, generation = obj.get("kind"), obj.get("generation")
    if not isinstance(kind, str) or not kind:
        raise ReportInputError(f"{where}: extra_info.genai.device.kind must be a non-empty string, got {kind!r}")
    if not isinstance(generation, str) or not generation:
        raise ReportInputError(
            f"{where}: extra_info.genai.device.generation must be a non-empty string, got {generation!r}"
        )
    name = obj.get("name") or ""
    return DeviceRef(kind=kind, generation=generation, name=str(name))


def _numbers(obj: Any, where: str, warnings: list[str]) -> dict[str, float]:
    if not isinstance(obj, dict):
        raise ReportInputError(f"{where} must be an object of name → number, got {type(obj).__name__}")
    out: dict[str, float] = {}
    for key, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            warnings.append(f"{where}.{key} is {value!r}, not a number; ignored")
            continue
        if isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                raise ReportInputError(
                    f"{where}.{key} is an integer of about {value.bit_length() * 3 // 10 + 1} digits, too large for a float; "
                    "record it as a float (or in a larger unit) and regenerate the file"
                ) from None
        elif not math.isfinite(value):
            warnings.append(f"{where}.{key} is {value} (not finite)")
        out[str(key)] = value
    return out


def _strings(obj: Any, where: str) -> dict[str, str]:
    if not isinstance(obj, dict):
        raise ReportInputError(f"{where} must be an object of name → string, got {type(obj).__name__}")
    return {str(k): str(v) for k, v in obj.items()}
