"""Claims and metric definitions as data: loading and validating the TOML files in ``claims/data``.

* ``metrics_*.toml`` — ``[[metric]]`` tables: ``name``, ``unit``, ``direction`` (higher | lower | none),
  ``description`` and the flags of :class:`MetricDef`.
* ``paper_*.toml`` — one file per paper: ``paper`` and ``title``, then ``[[claim]]`` tables, each with a ``basis``:
  ``paper``, ``target`` (our goal), ``physics`` (any correct measurement passes) or ``reference`` (a vendor's
  published number). Only ``paper`` claims are attributed to the paper; ``target`` and ``reference`` never fail a
  test. ``timing = true`` on a claim marks a shared metric as timed here.

Every loading error names the file, the claim (or metric) and the field.
"""
from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

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

    @property
    def higher_is_better(self) -> bool | None:
        return {"higher": True, "lower": False}.get(self.direction)


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
        if self.basis == "paper":
            return f"Paper {self.paper}, {self.section}"
        return BASIS_WORDS[self.basis]

    def bound_text(self) -> str:
        from pytest_genai.tables import bound_text

        return bound_text(self.min, self.max)

    def applies_to(
        self,
        *,
        device_kind: str | None,
        generation: str | None,
        model: str | None,
        experiment: str | None,
        config: Mapping[str, Any] | None = None,
    ) -> tuple[bool, str]:
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
            if not where_matches(required, have):
                return False, f"config {key}={have!r}, claim needs {where_text(key, required)}"
        return True, ""

    def matches_generations(self, baseline: str, current: str) -> bool:
        """For generation claims: does baseline → current match (``a100`` matches ``a100-sxm4-80gb``, not ``a1000``)?"""
        def same(generation: str, wanted: str | None) -> bool:
            return bool(wanted) and (generation == wanted or generation.startswith(f"{wanted}-"))

        return self.kind == "generation" and same(baseline, self.from_generation) and same(current, self.to_generation)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def where_matches(required: Any, have: Any) -> bool:
    """A ``where`` value is a required value, or an inclusive range table ``{ min = 2 }`` / ``{ max = 8 }``."""
    if not isinstance(required, dict):
        return have == required
    if isinstance(have, bool) or not isinstance(have, (int, float)):
        return False
    return required.get("min", -math.inf) <= have <= required.get("max", math.inf)


def where_text(key: str, required: Any) -> str:
    """``world_size >= 2`` for a range, ``'fsdp'`` for a value: what a not_applicable reason says the claim needs."""
    if not isinstance(required, dict):
        return repr(required)
    parts = [f"{key} >= {_fmt(required['min'])}" if "min" in required else "",
             f"{key} <= {_fmt(required['max'])}" if "max" in required else ""]
    return " and ".join(p for p in parts if p)


def _check_where_ranges(where_cfg: Mapping[str, Any], where: str) -> None:
    for key, required in where_cfg.items():
        if not isinstance(required, dict):
            continue
        if not required or set(required) - {"min", "max"}:
            raise ClaimsError(f"{where}: 'where' {key} = {required!r}: a range takes 'min' and/or 'max' only "
                              f"(e.g. {key} = {{ min = 2 }})")
        for bound in required.values():
            _float(bound, where, f"where.{key}")


def _data_dir() -> Any:
    return resources.files("pytest_genai.claims").joinpath("data")


def _float(value: Any, where: str, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ClaimsError(f"{where}: field {field!r} must be a finite number, got {value!r}")
    return float(value)


def _str_tuple(value: Any, where: str, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ClaimsError(f"{where}: field {field!r} must be a list of strings, got {value!r}")
    return tuple(value)


def parse_metrics(data: Mapping[str, Any], file: str) -> dict[str, MetricDef]:
    metrics: dict[str, MetricDef] = {}
    allowed = {"name", "unit", "direction", "description", "timing", "source", "max_regression", "machine_normalized",
               "measured_inputs", "numerator", "optional", "contention_free"}
    for i, entry in enumerate(data.get("metric", [])):
        where = f"{file}: metric #{i + 1}"
        if not isinstance(entry, dict):
            raise ClaimsError(f"{where}: expected a [[metric]] table")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ClaimsError(f"{where}: field 'name' is required")
        where = f"{file}: metric {name!r}"
        extra = set(entry) - allowed
        if extra:
            raise ClaimsError(f"{where}: unknown field(s) {sorted(extra)}; allowed: {sorted(allowed)}")
        direction = entry.get("direction")
        if direction not in DIRECTIONS:
            raise ClaimsError(f"{where}: field 'direction' must be one of {DIRECTIONS}, got {direction!r}")
        unit = entry.get("unit")
        if not isinstance(unit, str):
            raise ClaimsError(f"{where}: field 'unit' is required (use \"1\" for a dimensionless ratio)")
        if name in metrics:
            raise ClaimsError(f"{where}: defined twice in the same file")
        timing = entry.get("timing", False)
        if not isinstance(timing, bool):
            raise ClaimsError(f"{where}: field 'timing' must be true or false, got {timing!r}")
        source = entry.get("source")
        if source is not None and source not in SOURCES:
            raise ClaimsError(f"{where}: field 'source' must be one of {SOURCES}, got {source!r}")
        limit = entry.get("max_regression")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                                  or not 0 <= limit < 1):
            raise ClaimsError(f"{where}: field 'max_regression' must be a fraction in [0, 1) (0.005 = 0.5%), "
                              f"got {limit!r}")
        normalized = entry.get("machine_normalized", False)
        if not isinstance(normalized, bool):
            raise ClaimsError(f"{where}: field 'machine_normalized' must be true or false, got {normalized!r}")
        if normalized and not timing:
            raise ClaimsError(f"{where}: 'machine_normalized = true' is for a timing ratio; add 'timing = true'")
        noisy = entry.get("measured_inputs", False)
        if not isinstance(noisy, bool):
            raise ClaimsError(f"{where}: field 'measured_inputs' must be true or false, got {noisy!r}")
        numerator = entry.get("numerator")
        if numerator is not None and (not isinstance(numerator, str) or not numerator or numerator == name):
            raise ClaimsError(f"{where}: field 'numerator' must name another metric (\"achieved_tflops\"), "
                              f"got {numerator!r}")
        flags = {}
        for flag in ("optional", "contention_free"):
            flags[flag] = entry.get(flag, False)
            if not isinstance(flags[flag], bool):
                raise ClaimsError(f"{where}: field {flag!r} must be true or false, got {flags[flag]!r}")
        metrics[name] = MetricDef(name, unit, direction, str(entry.get("description", "")), timing, source,
                                  None if limit is None else float(limit), normalized, noisy, numerator, **flags)
    return metrics


def merge_metrics(parts: Iterable[tuple[str, dict[str, MetricDef]]]) -> dict[str, MetricDef]:
    merged: dict[str, MetricDef] = {}
    origin: dict[str, str] = {}
    for file, metrics in parts:
        for name, metric in metrics.items():
            old = merged.get(name)
            if old is not None and (old.unit, old.direction, old.timing, old.source) != (
                    metric.unit, metric.direction, metric.timing, metric.source):
                raise ClaimsError(
                    f"{file}: metric {name!r} conflicts with {origin[name]} "
                    f"(unit/direction/timing {metric.unit}/{metric.direction}/{metric.timing} vs "
                    f"{old.unit}/{old.direction}/{old.timing})"
                )
            if old is None:
                merged[name], origin[name] = metric, file
    for name, metric in merged.items():
        if metric.numerator is not None and metric.numerator not in merged:
            raise ClaimsError(f"{origin[name]}: metric {name!r}: numerator {metric.numerator!r} is not a registered "
                              "metric; register it or name one that is")
    return merged


_CLAIM_FIELDS = {
    "id", "section", "metric", "unit", "min", "max", "paper_value", "paper_text", "devices", "models",
    "experiment", "where", "kind", "from_generation", "to_generation", "note", "basis", "timing",
}


def parse_claims(data: Mapping[str, Any], file: str, metrics: Mapping[str, MetricDef]) -> list[Claim]:
    paper = data.get("paper")
    if not isinstance(paper, str) or not paper:
        raise ClaimsError(f"{file}: top-level field 'paper' is required (e.g. paper = \"A\")")
    claims = []
    seen = set()
    for i, entry in enumerate(data.get("claim", [])):
        where = f"{file}: claim #{i + 1}"
        if not isinstance(entry, dict):
            raise ClaimsError(f"{where}: expected a [[claim]] table")
        cid = entry.get("id")
        if not isinstance(cid, str) or not cid:
            raise ClaimsError(f"{where}: field 'id' is required")
        where = f"{file}: claim {cid!r}"
        if cid in seen:
            raise ClaimsError(f"{where}: id used twice")
        seen.add(cid)
        extra = set(entry) - _CLAIM_FIELDS
        if extra:
            raise ClaimsError(f"{where}: unknown field(s) {sorted(extra)}; allowed: {sorted(_CLAIM_FIELDS)}")
        metric_name = entry.get("metric")
        if not isinstance(metric_name, str) or not metric_name:
            raise ClaimsError(f"{where}: field 'metric' is required")
        if metric_name not in metrics:
            raise ClaimsError(
                f"{where}: field 'metric' names unknown metric {metric_name!r}; register it in a "
                f"claims/data/metrics_*.toml file (known: {', '.join(sorted(metrics)) or 'none'})"
            )
        metric = metrics[metric_name]
        unit = entry.get("unit", metric.unit)
        if unit != metric.unit:
            raise ClaimsError(f"{where}: field 'unit' is {unit!r} but metric {metric_name!r} is in {metric.unit!r}")
        lo = _float(entry.get("min"), where, "min")
        hi = _float(entry.get("max"), where, "max")
        if lo is None and hi is None:
            raise ClaimsError(f"{where}: needs a bound: field 'min' and/or 'max'")
        if lo is not None and hi is not None and lo > hi:
            raise ClaimsError(f"{where}: field 'min' ({lo}) is greater than field 'max' ({hi})")
        kind = entry.get("kind", "value")
        if kind not in CLAIM_KINDS:
            raise ClaimsError(f"{where}: field 'kind' must be one of {CLAIM_KINDS}, got {kind!r}")
        if kind == "generation" and not (entry.get("from_generation") and entry.get("to_generation")):
            raise ClaimsError(f"{where}: a generation claim needs fields 'from_generation' and 'to_generation'")
        for field in ("from_generation", "to_generation"):
            _check_generation(entry.get(field), where, field)
        where_cfg = entry.get("where", {})
        if not isinstance(where_cfg, dict):
            raise ClaimsError(f"{where}: field 'where' must be a table of config key = value")
        experiment = entry.get("experiment")
        if experiment is not None and experiment not in EXPERIMENTS:
            raise ClaimsError(f"{where}: field 'experiment' is {experiment!r}, not an experiment the benchmarks record; "
                              f"use one of {', '.join(EXPERIMENTS)} (or leave it out for any)")
        _check_where_keys(where_cfg, experiment, where)
        _check_where_ranges(where_cfg, where)
        _check_devices(_str_tuple(entry.get("devices"), where, "devices"), where)
        section = entry.get("section")
        if not isinstance(section, str) or not section:
            raise ClaimsError(f"{where}: field 'section' is required (e.g. \"A1\")")
        basis = entry.get("basis")
        if basis not in BASES:
            raise ClaimsError(
                f"{where}: field 'basis' must be one of {BASES} (paper: the paper's number or statement; target: "
                f"our goal; physics: a check any correct measurement passes; reference: a vendor's published number), "
                f"got {basis!r}"
            )
        timing = entry.get("timing", metric.timing)
        if not isinstance(timing, bool):
            raise ClaimsError(f"{where}: field 'timing' must be true or false, got {timing!r}")
        if metric.timing and not timing:
            raise ClaimsError(f"{where}: field 'timing' is false but metric {metric_name!r} is a timing metric; "
                              "leave the field out (a claim can mark its measurement as timed, not unmark it)")
        if basis != "paper" and entry.get("paper_value") is not None:
            raise ClaimsError(f"{where}: field 'paper_value' is for basis = \"paper\" claims only (this one is {basis})")
        paper_value = _float(entry.get("paper_value"), where, "paper_value")
        if paper_value is not None and ((lo is not None and paper_value < lo) or (hi is not None and paper_value > hi)):
            raise ClaimsError(f"{where}: field 'paper_value' ({paper_value:g}) is outside the claim's own bounds "
                              f"[{'' if lo is None else f'{lo:g}'}, {'' if hi is None else f'{hi:g}'}]: the paper's "
                              "number would fail its own claim; check the bounds or the value")
        claims.append(Claim(
            id=cid, paper=paper, section=section, metric=metric_name, unit=unit, direction=metric.direction,
            min=lo, max=hi, paper_value=paper_value, paper_text=str(entry.get("paper_text", "")),
            devices=_str_tuple(entry.get("devices"), where, "devices"),
            models=_str_tuple(entry.get("models"), where, "models"), experiment=entry.get("experiment"),
            where=dict(where_cfg), kind=kind, from_generation=entry.get("from_generation"),
            to_generation=entry.get("to_generation"), note=str(entry.get("note", "")), file=file, basis=basis,
            timing=timing))
    return claims


def _check_where_keys(where_cfg: Mapping[str, Any], experiment: str | None, where: str) -> None:
    # a misspelled key fails loading instead of never applying
    from pytest_genai import experiments

    rows = [experiments.get(experiment)] if experiment else list(experiments.EXPERIMENTS)
    known = sorted({key for row in rows for key in row.config_keys})
    unknown = sorted(set(where_cfg) - set(known))
    if unknown:
        raise ClaimsError(f"{where}: 'where' key(s) {unknown} are not config keys of "
                          f"{experiment or 'any experiment'}; known: {', '.join(known)} (pytest_genai/experiments.py)")


def _check_generation(value: Any, where: str, field: str) -> None:
    if value is None:
        return
    from pytest_genai.devices.specs import load_specs

    known = sorted(load_specs())
    if not isinstance(value, str) or not any(g == value or g.startswith(f"{value}-") for g in known):
        raise ClaimsError(f"{where}: field {field!r} is {value!r}, no device generation of devices/data/specs.toml "
                          f"(nor a family of them, as a100 is of a100-sxm4-80gb); use one of {', '.join(known)}")


def _check_devices(devices: tuple[str, ...], where: str) -> None:
    if not devices:
        return
    from pytest_genai.devices.device import KINDS
    from pytest_genai.devices.specs import load_specs

    known = set(KINDS) | set(load_specs())
    bad = [d for d in devices if d not in known]
    if bad:
        raise ClaimsError(f"{where}: field 'devices' names unknown device(s) {bad}; use kinds ({', '.join(KINDS)}) or "
                          f"generations of devices/data/specs.toml ({', '.join(sorted(load_specs()))})")


def _toml_text(entry: Any) -> str:
    """A claims file's text as UTF-8 (BOM dropped); anything else a :class:`ClaimsError` naming the file."""
    data = entry.read_bytes()
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise UnicodeError("UTF-16")
        return data.decode("utf-8-sig")
    except UnicodeError as exc:
        raise ClaimsError(f"{entry.name}: not UTF-8 text ({exc}); TOML files are UTF-8: convert it, e.g. "
                          "iconv -f UTF-16 -t UTF-8") from None


def _read_dir(directory: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for entry in sorted(directory.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            out.append((entry.name, load_toml(_toml_text(entry), entry.name)))
    return out


def load_metrics(directory: str | Path | None = None) -> dict[str, MetricDef]:
    """Every registered metric (all ``metrics_*.toml`` files in ``directory``, default: the packaged data)."""
    directory = Path(directory) if directory is not None else _data_dir()
    files = [(name, data) for name, data in _read_dir(directory) if name.startswith("metrics_")]
    return merge_metrics((name, parse_metrics(data, name)) for name, data in files)


def load_claims(directory: str | Path | None = None) -> list[Claim]:
    """Every claim (all ``paper_*.toml`` files in ``directory``, default: the packaged data), validated."""
    directory = Path(directory) if directory is not None else _data_dir()
    files = _read_dir(directory)
    metrics = merge_metrics(
        (name, parse_metrics(data, name)) for name, data in files if name.startswith("metrics_")
    )
    claims: list[Claim] = []
    ids: dict[str, str] = {}
    for name, data in files:
        if not name.startswith("paper_"):
            continue
        for claim in parse_claims(data, name, metrics):
            if claim.id in ids:
                raise ClaimsError(f"{name}: claim {claim.id!r} already defined in {ids[claim.id]}")
            ids[claim.id] = name
            claims.append(claim)
    return claims


def default_metric_info() -> tuple[dict[str, Any], str | None]:
    """The suite's registry as :class:`~pytest_genai.results.registry.MetricInfo`, and a warning when it could not
    be loaded (then only the built-in metrics are known)."""
    from pytest_genai.results.registry import BUILTIN_METRICS, metric_info_from

    try:
        registry = load_metrics()
    except Exception as exc:  # a malformed registry file: report it, do not crash the command
        return dict(BUILTIN_METRICS), f"metric registry could not be loaded: {exc}"
    return metric_info_from(registry), None


def claims_by_id(load: Any = None) -> tuple[dict[str, Claim], str | None]:
    """Every claim by id (from ``load()``, default the packaged data), and a warning instead of a crash when the
    claims data cannot be loaded."""
    try:
        return (dict(load()) if load is not None else {c.id: c for c in load_claims()}), None
    except Exception as exc:  # malformed or missing claims data
        return {}, f"claims data could not be loaded ({exc}); paper values not shown"
