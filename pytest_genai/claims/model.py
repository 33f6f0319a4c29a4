"""Claims and metric definitions as data: loading and validating the TOML files in ``claims/data``.

``metrics_*.toml`` holds ``[[metric]]`` tables (the fields of :class:`MetricDef`); each ``paper_*.toml`` a ``paper``
and ``[[claim]]`` tables, each with a ``basis``: ``paper``, ``target`` (our goal), ``physics`` (any correct measurement
passes) or ``reference`` (a vendor's published number). Only ``paper`` claims are attributed to the paper; ``target``
and ``reference`` never fail a test. Every loading error names the file, the claim (or metric) and the field.
"""
from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from pytest_genai._toml import load_toml
from pytest_genai.experiments import NAMES

DIRECTIONS = ("higher", "lower", "none")
CLAIM_KINDS = ("value", "generation")
BASES = ("paper", "target", "physics", "reference")
#: Bases whose missed claims are reported, never a failed test: our own goals and vendors' published numbers.
REPORT_ONLY_BASES = ("target", "reference")
#: Where a number comes from; ``reference`` only in runs ``pytest-genai reference runs`` writes.
SOURCES = ("measured", "modeled", "spec", "config", "reference")
EXPERIMENTS = NAMES  # a claim's ``experiment`` must be one of them
BASIS_WORDS = {"target": "project target, not a paper claim", "physics": "physics check, not a paper claim",
               "reference": "a vendor's published measurement, not a paper claim"}


class ClaimsError(ValueError):
    """A claims or metrics file is malformed."""


@dataclasses.dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    direction: str
    description: str = ""
    timing: bool = False
    source: str | None = None  # fixed source kind (spec, modeled, config, measured); None: decided per recording
    max_regression: float | None = None  # the gate's default threshold (fraction)
    # a timing ratio over a reference kernel: the gate counts a raw speed regression only where this agrees
    machine_normalized: bool = False
    measured_inputs: bool = False  # modeled from measured times: noisy, never compared as exact
    # this metric over a peak (MFU): a regression counts only where the numerator's row regressed too
    numerator: str | None = None
    optional: bool = False  # recorded only where the machine can measure it: absent is listed, not failed
    contention_free: bool = False  # an instruction count: the gate's pressure rule does not hold it back


@dataclasses.dataclass(frozen=True)
class Claim:
    """One expectation from a paper, with the bounds a measurement must satisfy."""

    id: str
    paper: str
    section: str
    metric: str
    unit: str
    direction: str
    min: float | None = None
    max: float | None = None
    paper_value: float | None = None
    paper_text: str = ""
    devices: tuple[str, ...] = ()  # kinds or generations; empty = any device
    models: tuple[str, ...] = ()  # model names; empty = any model
    experiment: str | None = None
    where: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # config key -> value, or { min, max }
    kind: str = "value"
    from_generation: str | None = None
    to_generation: str | None = None
    note: str = ""
    file: str = ""
    basis: str = "paper"
    timing: bool = False  # its metric is derived from measured times: judged on an interval over rounds

    @property
    def source(self) -> str:
        """Where the claim comes from, as every output shows it: the paper only for ``paper`` claims."""
        return f"Paper {self.paper}, {self.section}" if self.basis == "paper" else BASIS_WORDS[self.basis]

    def bound_text(self) -> str:
        from pytest_genai.tables import bound_text

        return bound_text(self.min, self.max)

    def applies_to(self, *, device_kind: str | None, generation: str | None, model: str | None,
                   experiment: str | None, config: Mapping[str, Any] | None = None) -> tuple[bool, str]:
        """Whether this claim is in scope for a measurement, and why not when it is not."""
        if self.kind != "value":
            return False, "generation claims compare two runs (pytest-genai gate)"
        if self.experiment and experiment and self.experiment != experiment:
            return False, f"experiment {experiment!r} is not {self.experiment!r}"
        if self.devices and device_kind not in self.devices and generation not in self.devices:
            return False, f"device {generation or device_kind} not in {list(self.devices)}"
        if self.models and (model is None or model.lower() not in {m.lower() for m in self.models}):
            return False, f"model {model} not in {list(self.models)}"
        for key, required in self.where.items():
            have = (config or {}).get(key)
            if (need := _unmet(key, required, have)) is not None:
                return False, f"config {key}={have!r}, claim needs {need}"
        return True, ""

    def matches_generations(self, baseline: str, current: str) -> bool:
        """For generation claims: does baseline → current match (``a100`` matches ``a100-sxm4-80gb``, not ``a1000``)?"""
        def same(generation: str, wanted: str | None) -> bool:
            return bool(wanted) and (generation == wanted or generation.startswith(f"{wanted}-"))

        return self.kind == "generation" and same(baseline, self.from_generation) and same(current, self.to_generation)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unmet(key: str, required: Any, have: Any) -> str | None:
    """What a ``where`` value (a value, or a range ``{ min = 2 }``) needs that ``have`` lacks: ``world_size >= 2``."""
    if not isinstance(required, dict):
        return None if have == required else repr(required)
    if _number(have) and required.get("min", -math.inf) <= have <= required.get("max", math.inf):
        return None
    return " and ".join(f"{key} {op} {required[end]:.4g}" for end, op in (("min", ">="), ("max", "<="))
                        if end in required)


def _float(value: Any, where: str, field: str) -> float | None:
    if value is None:
        return None
    if not _number(value) or not math.isfinite(value):
        raise ClaimsError(f"{where}: field {field!r} must be a finite number, got {value!r}")
    return float(value)


def _str_tuple(value: Any, where: str, field: str) -> tuple[str, ...]:
    if value is None or isinstance(value, str):
        return () if value is None else (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ClaimsError(f"{where}: field {field!r} must be a list of strings, got {value!r}")
    return tuple(value)


def _text(entry: Mapping[str, Any], field: str, where: str, hint: str = "", empty: bool = False) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not (value or empty):
        raise ClaimsError(f"{where}: field {field!r} is required{hint}")
    return value


def _field(entry: Mapping[str, Any], field: str, where: str, ok: Any, wants: str = "", default: Any = None) -> Any:
    """``entry[field]`` (``default`` when absent) if ``ok`` (a test, or the allowed values) accepts it."""
    value = entry.get(field, default)
    if not (ok(value) if callable(ok) else value in ok):
        raise ClaimsError(f"{where}: field {field!r} {wants or f'must be one of {ok}'}, got {value!r}")
    return value


_TRUE_FALSE = (lambda value: isinstance(value, bool), "must be true or false")


def _tables(data: Mapping[str, Any], file: str, what: str, key: str, allowed: set[str],
            twice: str) -> Iterator[tuple[dict[str, Any], str, str]]:
    """Each ``[[what]]`` table, its ``key`` (required, unique) and the ``file: what 'key'`` its errors start with."""
    seen = set()
    for i, entry in enumerate(data.get(what, [])):
        where = f"{file}: {what} #{i + 1}"
        if not isinstance(entry, dict):
            raise ClaimsError(f"{where}: expected a [[{what}]] table")
        name = _text(entry, key, where)
        where = f"{file}: {what} {name!r}"
        if name in seen:
            raise ClaimsError(f"{where}: {twice}")
        seen.add(name)
        extra = set(entry) - allowed
        if extra:
            raise ClaimsError(f"{where}: unknown field(s) {sorted(extra)}; allowed: {sorted(allowed)}")
        yield entry, name, where


def parse_metrics(data: Mapping[str, Any], file: str) -> dict[str, MetricDef]:
    """The ``[[metric]]`` tables of one metrics file, validated."""
    metrics: dict[str, MetricDef] = {}
    allowed = {f.name for f in dataclasses.fields(MetricDef)}
    for entry, name, where in _tables(data, file, "metric", "name", allowed, "defined twice in the same file"):
        direction = _field(entry, "direction", where, DIRECTIONS)
        unit = _text(entry, "unit", where, " (use \"1\" for a dimensionless ratio)", empty=True)
        flags = {flag: _field(entry, flag, where, *_TRUE_FALSE, default=False)
                 for flag in ("timing", "machine_normalized", "measured_inputs", "optional", "contention_free")}
        source = _field(entry, "source", where, lambda v: v is None or v in SOURCES, f"must be one of {SOURCES}")
        limit = _field(entry, "max_regression", where, lambda v: v is None or (_number(v) and 0 <= v < 1),
                       "must be a fraction in [0, 1) (0.005 = 0.5%)")
        if flags["machine_normalized"] and not flags["timing"]:
            raise ClaimsError(f"{where}: 'machine_normalized = true' is for a timing ratio; add 'timing = true'")
        numerator = _field(entry, "numerator", where, lambda v: v is None or isinstance(v, str) and v not in ("", name),
                           "must name another metric (\"achieved_tflops\")")
        metrics[name] = MetricDef(name, unit, direction, str(entry.get("description", "")), source=source,
                                  max_regression=None if limit is None else float(limit), numerator=numerator,
                                  **flags)
    return metrics


def merge_metrics(parts: Iterable[tuple[str, dict[str, MetricDef]]]) -> dict[str, MetricDef]:
    """One registry from several files' metrics; a metric defined differently in two files is an error."""
    merged: dict[str, MetricDef] = {}
    origin: dict[str, str] = {}
    for file, metrics in parts:
        for name, metric in metrics.items():
            old = merged.setdefault(name, metric)
            origin.setdefault(name, file)
            if (old.unit, old.direction, old.timing, old.source) != (
                    metric.unit, metric.direction, metric.timing, metric.source):
                raise ClaimsError(f"{file}: metric {name!r} conflicts with {origin[name]} (unit/direction/timing "
                                  f"{metric.unit}/{metric.direction}/{metric.timing} vs {old.unit}/{old.direction}/"
                                  f"{old.timing})")
    for name, metric in merged.items():
        if metric.numerator is not None and metric.numerator not in merged:
            raise ClaimsError(f"{origin[name]}: metric {name!r}: numerator {metric.numerator!r} is not a registered "
                              "metric; register it or name one that is")
    return merged


# every Claim field but those the file or the metric gives
_CLAIM_FIELDS = {f.name for f in dataclasses.fields(Claim)} - {"paper", "direction", "file"}


def parse_claims(data: Mapping[str, Any], file: str, metrics: Mapping[str, MetricDef]) -> list[Claim]:
    """The ``[[claim]]`` tables of one paper file, validated against the registered ``metrics``."""
    paper = data.get("paper")
    if not isinstance(paper, str) or not paper:
        raise ClaimsError(f"{file}: top-level field 'paper' is required (e.g. paper = \"A\")")
    claims = []
    for entry, cid, where in _tables(data, file, "claim", "id", _CLAIM_FIELDS, "id used twice"):
        metric_name = _text(entry, "metric", where)
        if metric_name not in metrics:
            raise ClaimsError(f"{where}: field 'metric' names unknown metric {metric_name!r}; register it in a "
                              f"claims/data/metrics_*.toml file (known: {', '.join(sorted(metrics)) or 'none'})")
        metric = metrics[metric_name]
        unit = entry.get("unit", metric.unit)
        if unit != metric.unit:
            raise ClaimsError(f"{where}: field 'unit' is {unit!r} but metric {metric_name!r} is in {metric.unit!r}")
        lo, hi = (_float(entry.get(end), where, end) for end in ("min", "max"))
        if lo is None and hi is None:
            raise ClaimsError(f"{where}: needs a bound: field 'min' and/or 'max'")
        if lo is not None and hi is not None and lo > hi:
            raise ClaimsError(f"{where}: field 'min' ({lo}) is greater than field 'max' ({hi})")
        kind = _field(entry, "kind", where, CLAIM_KINDS, default="value")
        if kind == "generation" and not (entry.get("from_generation") and entry.get("to_generation")):
            raise ClaimsError(f"{where}: a generation claim needs fields 'from_generation' and 'to_generation'")
        experiment, where_cfg, devices = _check_scope(entry, where)
        section = _text(entry, "section", where, " (e.g. \"A1\")")
        basis = _field(entry, "basis", where, BASES, f"must be one of {BASES} (paper: the paper's number or statement; "
                       "target: our goal; physics: a check any correct measurement passes; reference: a vendor's "
                       "published number)")
        timing = _field(entry, "timing", where, *_TRUE_FALSE, default=metric.timing)
        if metric.timing and not timing:
            raise ClaimsError(f"{where}: field 'timing' is false but metric {metric_name!r} is a timing metric; "
                              "leave the field out (a claim can mark its measurement as timed, not unmark it)")
        if basis != "paper" and entry.get("paper_value") is not None:
            raise ClaimsError(f"{where}: field 'paper_value' is for basis = \"paper\" claims only "
                              f"(this one is {basis})")
        paper_value = _float(entry.get("paper_value"), where, "paper_value")
        if paper_value is not None and ((lo is not None and paper_value < lo) or (hi is not None and paper_value > hi)):
            raise ClaimsError(f"{where}: field 'paper_value' ({paper_value:g}) is outside the claim's own bounds "
                              f"[{'' if lo is None else f'{lo:g}'}, {'' if hi is None else f'{hi:g}'}]: the paper's "
                              "number would fail its own claim; check the bounds or the value")
        claims.append(Claim(
            id=cid, paper=paper, section=section, metric=metric_name, unit=unit, direction=metric.direction,
            min=lo, max=hi, paper_value=paper_value, paper_text=str(entry.get("paper_text", "")), devices=devices,
            models=_str_tuple(entry.get("models"), where, "models"), experiment=experiment, where=dict(where_cfg),
            kind=kind, from_generation=entry.get("from_generation"), to_generation=entry.get("to_generation"),
            note=str(entry.get("note", "")), file=file, basis=basis, timing=timing))
    return claims


def _check_scope(entry: Mapping[str, Any], where: str) -> tuple[str | None, dict[str, Any], tuple[str, ...]]:
    """A claim's ``experiment``, ``where`` and ``devices``, and its generations, checked against what the suite knows:
    a misspelled name fails loading instead of never applying."""
    from pytest_genai import experiments
    from pytest_genai.devices.device import KINDS
    from pytest_genai.devices.specs import load_specs

    generations = sorted(load_specs())
    for field in ("from_generation", "to_generation"):
        value = entry.get(field)
        if value is not None and (not isinstance(value, str)
                                  or not any(g == value or g.startswith(f"{value}-") for g in generations)):
            raise ClaimsError(f"{where}: field {field!r} is {value!r}, no device generation of devices/data/specs.toml "
                              "(nor a family of them, as a100 is of a100-sxm4-80gb); use one of "
                              f"{', '.join(generations)}")
    where_cfg, experiment = entry.get("where", {}), entry.get("experiment")
    if not isinstance(where_cfg, dict):
        raise ClaimsError(f"{where}: field 'where' must be a table of config key = value")
    if experiment is not None and experiment not in EXPERIMENTS:
        raise ClaimsError(f"{where}: field 'experiment' is {experiment!r}, not an experiment the benchmarks "
                          f"record; use one of {', '.join(EXPERIMENTS)} (or leave it out for any)")
    rows = [experiments.get(experiment)] if experiment else list(experiments.EXPERIMENTS)
    known = sorted({key for row in rows for key in row.config_keys})
    unknown = sorted(set(where_cfg) - set(known))
    if unknown:
        raise ClaimsError(f"{where}: 'where' key(s) {unknown} are not config keys of "
                          f"{experiment or 'any experiment'}; known: {', '.join(known)} (pytest_genai/experiments.py)")
    for key, required in where_cfg.items():
        if not isinstance(required, dict):
            continue
        if not required or set(required) - {"min", "max"}:
            raise ClaimsError(f"{where}: 'where' {key} = {required!r}: a range takes 'min' and/or 'max' only "
                              f"(e.g. {key} = {{ min = 2 }})")
        for bound in required.values():
            _float(bound, where, f"where.{key}")
    devices = _str_tuple(entry.get("devices"), where, "devices")
    bad = [d for d in devices if d not in KINDS and d not in generations]
    if bad:
        raise ClaimsError(f"{where}: field 'devices' names unknown device(s) {bad}; use kinds ({', '.join(KINDS)}) or "
                          f"generations of devices/data/specs.toml ({', '.join(generations)})")
    return experiment, where_cfg, devices


def _read_dir(directory: str | Path | None) -> list[tuple[str, dict[str, Any]]]:
    """Each ``.toml`` file of ``directory`` (default: the packaged data), parsed; UTF-8 only (a BOM is dropped)."""
    directory = Path(directory) if directory is not None else resources.files("pytest_genai.claims").joinpath("data")
    out = []
    for entry in sorted((e for e in directory.iterdir() if e.name.endswith(".toml")), key=lambda p: p.name):
        data = entry.read_bytes()
        try:
            if data.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise UnicodeError("UTF-16")
            text = data.decode("utf-8-sig")
        except UnicodeError as exc:
            raise ClaimsError(f"{entry.name}: not UTF-8 text ({exc}); TOML files are UTF-8: convert it, e.g. "
                              "iconv -f UTF-16 -t UTF-8") from None
        out.append((entry.name, load_toml(text, entry.name)))
    return out


def load_metrics(directory: str | Path | None = None) -> dict[str, MetricDef]:
    """Every registered metric (all ``metrics_*.toml`` files in ``directory``, default: the packaged data)."""
    return merge_metrics((name, parse_metrics(data, name)) for name, data in _read_dir(directory)
                         if name.startswith("metrics_"))


def load_claims(directory: str | Path | None = None) -> list[Claim]:
    """Every claim (all ``paper_*.toml`` files in ``directory``, default: the packaged data), validated."""
    files = _read_dir(directory)
    metrics = merge_metrics((name, parse_metrics(data, name)) for name, data in files if name.startswith("metrics_"))
    claims: dict[str, Claim] = {}
    for name, data in files:
        for claim in parse_claims(data, name, metrics) if name.startswith("paper_") else ():
            if claim.id in claims:
                raise ClaimsError(f"{name}: claim {claim.id!r} already defined in {claims[claim.id].file}")
            claims[claim.id] = claim
    return list(claims.values())


def default_metric_info() -> tuple[dict[str, Any], str | None]:
    """The suite's registry as ``MetricInfo``s, and a warning (then only the built-in metrics) if it cannot load."""
    from pytest_genai.results.registry import BUILTIN_METRICS, metric_info_from

    try:
        registry = load_metrics()
    except Exception as exc:  # a malformed registry file: report it, do not crash the command
        return dict(BUILTIN_METRICS), f"metric registry could not be loaded: {exc}"
    return metric_info_from(registry), None


def claims_by_id(load: Any = None) -> tuple[dict[str, Claim], str | None]:
    """Every claim by id (from ``load()``, default the packaged data), or a warning if the claims cannot load."""
    try:
        return (dict(load()) if load is not None else {c.id: c for c in load_claims()}), None
    except Exception as exc:  # malformed or missing claims data
        return {}, f"claims data could not be loaded ({exc}); paper values not shown"
