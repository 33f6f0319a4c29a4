"""Option parsing and resolution. Settings resolve CLI → environment → ini → default; errors name the source."""
from __future__ import annotations

import functools
import math
import os
import re
from typing import Any, Callable

from pytest_genai.devices.device import KINDS
from pytest_genai.runtime.rounds import DEFAULT_BUDGET_S, parse_duration, parse_rounds

CLAIMS_MODES = ("enforce", "strict", "report")

MAX_BYTES = 2**60  # 1 EiB: a larger size is a typo, not a device
MAX_TIME_BUDGET_S = 86_400.0  # over a day per benchmark is a typo
_BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def _shown(text: Any) -> str:
    """A value as an error quotes it, cut at 40 characters."""
    text = str(text)
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


def _comma_list(text: Any, known: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """``"a, B,a"`` → the names in order, lower case, without repeats, and those of them not in ``known``."""
    names = tuple(dict.fromkeys(t.strip().lower() for t in str(text).split(",") if t.strip()))
    return names, [name for name in names if name not in known]


def parse_devices(text: str) -> tuple[str, ...]:
    """``"cuda,hpu"`` → ``("cuda", "hpu")``; ``"all"`` → every kind. Unknown names are an error naming them."""
    if text.strip().lower() in ("", "all"):
        return KINDS
    kinds, bad = _comma_list(text, KINDS)
    if bad:
        raise ValueError(f"unknown device kind(s) {', '.join(map(repr, bad))}; use a comma list of "
                         f"{', '.join(KINDS)} or 'all'")
    return kinds


def parse_require(text: str) -> tuple[str, ...]:
    """``--genai-require``: ``"hpu"`` or ``"cuda,hpu"`` → the kinds that must be present (no ``all``)."""
    kinds, bad = _comma_list(text, KINDS)
    if not kinds or bad:
        raise ValueError(f"{text!r}: not device kinds; use a comma list of {', '.join(KINDS)}, e.g. hpu or cuda,hpu")
    return kinds


def parse_claims_mode(text: str) -> str:
    mode = text.strip().lower()
    if mode not in CLAIMS_MODES:
        raise ValueError(f"{text!r} is not a claims mode; use 'enforce' (fail on a broken claim), 'strict' (also on an "
                         "inconclusive timing verdict) or 'report' (record only)")
    return mode


def parse_bytes(text: str) -> int:
    """``"2GiB"`` → 2147483648; accepts B, kB/MB/GB/TB (powers of 10) and KiB/MiB/GiB/TiB."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _BYTE_UNITS:
        raise ValueError(f"{text!r} is not a size; write e.g. 512MiB, 2GiB or 3GB")
    value = float(match.group(1)) * _BYTE_UNITS[unit]
    if not value < MAX_BYTES:  # 400 digits read as inf: int(inf) was pytest's INTERNALERROR
        raise ValueError(f"{_shown(text)} is more than 1 EiB, larger than any device; write e.g. 512MiB or 2GiB")
    size = int(value)
    if size < 1:
        raise ValueError(f"{text!r} is under one byte; give a size that fits a model, e.g. 512MiB or 2GiB")
    return size


def parse_path(text: str) -> str:
    """A path made absolute against the directory pytest started in (distributed workers run elsewhere)."""
    if not str(text).strip():
        raise ValueError("an empty path; give a folder or file")
    return os.path.abspath(os.path.expanduser(str(text)))


def parse_plots_dir(text: str) -> str:
    """``--genai-plots``: a folder, or one that can be made, checked before any benchmark runs."""
    path = parse_path(text)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{path}: is a file, not a folder; give a folder for the PNG plots")
    parent = path
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise ValueError(f"{path}: {parent} is a file, so no folder can be made under it; give a folder path")
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: {parent} cannot be written (read-only); give a folder this user can write")
    return path


def parse_time_budget(text: str) -> float:
    """``--genai-time-budget``: a duration (``60s``, ``2m``), finite and at most :data:`MAX_TIME_BUDGET_S`."""
    seconds = parse_duration(text)
    if not seconds <= MAX_TIME_BUDGET_S:
        raise ValueError(f"{_shown(text)} is more than a day per benchmark; write e.g. 60s, 2m or 90 (seconds)")
    return seconds


def parse_endpoint(text: str) -> str:
    """``--genai-rdzv-endpoint``: ``host:port`` (the port 1-65535), checked now rather than in every job's launch."""
    host, sep, port = str(text).strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not host:port (e.g. node001:29500); give the rendezvous host and a free port")
    return f"{host}:{int(port)}"


def parse_max_regression(text: str) -> str:
    """``--genai-max-regression``: parsed now (``tokens_per_s=5%,*=10%``), kept as text for the baseline plugin."""
    from pytest_genai.report.thresholds import ThresholdError, parse_thresholds

    try:
        parse_thresholds(text, option="--genai-max-regression")
    except ThresholdError as exc:  # the caller names the source (option, variable or ini) before the message
        raise ValueError(str(exc).removeprefix("--genai-max-regression: ")) from None
    return text


def parse_data_dir(text: str, hint: str = "`pytest-genai data fetch DIR` wrote (or a copy laid out like shared/data), "
                   "or leave it unset to use the embedded evaluation slice") -> str:
    """``--genai-data-dir`` (``--genai-dabench-profiles`` with its ``hint``): an existing folder, made absolute."""
    path = parse_path(text)
    if not os.path.isdir(path):
        raise ValueError(f"{path}: no such folder; give the folder {hint}")
    return path


def parse_positive_int(text: str) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise ValueError(f"{text!r} must be a positive integer")
    return value


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not a yes/no value; use yes or no")


SCALES = ("tiny", "small", "full")


def parse_scale(text: str) -> str:
    """``--genai-scale``: one of :data:`SCALES` (any case); a typo is a usage error here, not in one experiment."""
    scale = str(text).strip().lower()
    if scale not in SCALES:
        raise ValueError(f"{text!r} is not a scale; use one of {', '.join(SCALES)}")
    return scale


def parse_model(text: str) -> str:
    """``--genai-model``: a comma list of local model folders (checked now) or well-formed Hugging Face ids."""
    from pytest_genai.model_folder import option_problem

    parts = [part.strip() for part in str(text).split(",") if part.strip()]
    if not parts:
        raise ValueError("an empty model list; give a model folder or a cached Hugging Face id")
    if problem := next(filter(None, map(option_problem, parts)), None):
        raise ValueError(problem)
    return ",".join(parts)


#: A2 fine-tuning methods (tests/train/test_config.py keeps them equal to ``train.config.METHODS``).
FINETUNE_METHODS = ("full", "lora")


def parse_finetune_methods(text: str) -> tuple[str, ...]:
    """``--genai-finetune-methods``: a comma-separated subset of full, lora (order kept, repeats dropped)."""
    methods, bad = _comma_list(text, FINETUNE_METHODS)
    if not methods or bad:
        raise ValueError(f"{text!r}: use a comma-separated subset of {', '.join(FINETUNE_METHODS)} (e.g. full,lora)")
    return methods


def parse_timeout(text: str) -> float:
    """``--genai-timeout``: seconds, finite and positive (``inf`` would let a hung job hang the run forever)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number of seconds; write e.g. 300") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} must be a positive, finite number of seconds, e.g. 300 (a hung worker is killed "
                         "after it)")
    return value


def parse_store(text: str) -> str:
    """``--genai-store``: a SQLAlchemy URL, or a file path for a SQLite store (made absolute)."""
    from pytest_genai.store.location import normalize_url, sqlite_file, store_label

    url = normalize_url(text)
    try:  # checked now: a URL no dialect serves was found only after every benchmark ran ("run not stored")
        from sqlalchemy.engine import make_url
    except ImportError:
        raise ValueError("the results store needs SQLAlchemy: pip install 'pytest-genai[store]'") from None
    try:
        dialect = make_url(url).get_dialect()
    except Exception as exc:  # ArgumentError (not a URL), NoSuchModuleError (no such dialect)
        raise ValueError(f"{store_label(url)}: not a database URL SQLAlchemy can open ({type(exc).__name__}); give "
                         "sqlite:///PATH, postgresql+psycopg://USER@HOST/DB or a file path") from None
    if (path := sqlite_file(url)) and os.path.isdir(path):  # found only at the session's end before ("run not stored")
        raise ValueError(f"{path}: is a folder, not a database file; give a file path, e.g. {path.rstrip('/')}"
                         "/results.sqlite")
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise ValueError(f"{store_label(url)}: its database driver is not installed ({exc}); install it (PostgreSQL: "
                         "pip install 'psycopg[binary]') or use a SQLite file path") from None
    return url


def parse_run_noise(text: str) -> Any:
    """``--genai-run-noise``: as the gate's ``--run-noise`` (``measured``, a number, ``finetune=0.2,*=0.05``)."""
    from pytest_genai.report.run_noise import parse_run_noise as parse

    return parse(text, option="")


def parse_reference_rows(text: str) -> str:
    """``--genai-reference-rows``: ``os.pathsep``-joined rows files, read and checked now."""
    from pytest_genai.plugin.reference_verdicts import ReferenceRowsError, _counterparts

    paths = os.pathsep.join(parse_path(p) for p in text.split(os.pathsep) if p)
    try:
        _counterparts(paths)
    except ReferenceRowsError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return paths


#: name -> (cli option, env var, ini key, parser, default)
SETTINGS: dict[str, tuple[str, str | None, str | None, Callable[[str], Any] | None, Any]] = {
    "devices": ("--genai-devices", "GENAI_DEVICES", "genai_devices", parse_devices, KINDS),
    "require": ("--genai-require", "GENAI_REQUIRE", "genai_require", parse_require, ()),
    "claims": ("--genai-claims", "GENAI_CLAIMS", "genai_claims", parse_claims_mode, "enforce"),
    "data_dir": ("--genai-data-dir", "GENAI_DATA_DIR", "genai_data_dir", parse_data_dir, None),
    "model": ("--genai-model", "GENAI_MODEL", "genai_model", parse_model, None),
    "trust_remote_code": ("--genai-trust-remote-code", "GENAI_TRUST_REMOTE_CODE", None, parse_bool, False),
    "limit": ("--genai-limit", "GENAI_LIMIT", "genai_limit", parse_positive_int, None),
    "plots": ("--genai-plots", None, None, parse_plots_dir, None),
    "nproc": ("--genai-nproc", "GENAI_NPROC", None, parse_positive_int, 2),
    "nnodes": ("--genai-nnodes", "GENAI_NNODES", None, parse_positive_int, 1),
    "rdzv_endpoint": ("--genai-rdzv-endpoint", "GENAI_RDZV_ENDPOINT", None, parse_endpoint, None),
    "scale": ("--genai-scale", "GENAI_SCALE", "genai_scale", parse_scale, "tiny"),
    "memory_budget": ("--genai-memory-budget", "GENAI_MEMORY_BUDGET", None, parse_bytes, None),
    "timeout": ("--genai-timeout", "GENAI_TIMEOUT", "genai_timeout", parse_timeout, 300.0),
    "dabench_profiles": ("--genai-dabench-profiles", "GENAI_DABENCH_PROFILES", None, functools.partial(
        parse_data_dir, hint="holding the vendor runs' <kind>/ folders (docs/dabench_level2.md), or leave it unset"),
        None),
    "baseline": ("--genai-baseline", None, None, parse_path, None),
    "max_regression": ("--genai-max-regression", None, None, parse_max_regression, None),
    "reference_rows": ("--genai-reference-rows", "GENAI_REFERENCE_ROWS", None, parse_reference_rows, None),
    "run_noise": ("--genai-run-noise", "GENAI_RUN_NOISE", None, parse_run_noise, None),
    "report": ("--genai-report", "GENAI_REPORT", None, parse_path, None),
    "finetune_methods": ("--genai-finetune-methods", "GENAI_FINETUNE_METHODS", "genai_finetune_methods",
                         parse_finetune_methods, None),
    "store": ("--genai-store", "GENAI_STORE", "genai_store", parse_store, None),
    "rounds": ("--genai-rounds", "GENAI_ROUNDS", "genai_rounds", parse_rounds, None),
    "time_budget": ("--genai-time-budget", "GENAI_TIME_BUDGET", "genai_time_budget", parse_time_budget,
                    DEFAULT_BUDGET_S),
}


class SettingError(ValueError):
    pass


def given(config: Any, name: str) -> bool:
    """Was setting ``name`` set by the user (command line, environment or ini), rather than left at its default?"""
    return _given_value(config, name)[0] is not None


def resolve_all(config: Any) -> dict[str, Any]:
    """Every setting (see :func:`resolve`); in a Slurm step, unset ``nnodes`` and ``rdzv_endpoint`` come from Slurm."""
    values = {name: resolve(config, name) for name in SETTINGS}
    if not given(config, "nnodes") and not given(config, "rdzv_endpoint"):
        from pytest_genai.runtime import slurm

        try:
            step = slurm.from_env(os.environ)
        except ValueError as exc:
            raise SettingError(str(exc)) from None
        if step is not None:
            values["nnodes"], values["rdzv_endpoint"] = step.nnodes, step.rdzv_endpoint
    return values


def _given_value(config: Any, name: str) -> tuple[Any, str | None]:
    """Setting ``name``'s raw value and where it came from, or ``(None, None)`` when it is not set."""
    option, env, ini, _parser, _default = SETTINGS[name]
    if (raw := config.getoption(option.lstrip("-").replace("-", "_"))) is not None:
        return raw, f"command-line option {option}"
    if env and os.environ.get(env):
        return os.environ[env], f"environment variable {env}"
    try:
        value = config.getini(ini) if ini else None
    except TypeError as exc:  # a native-TOML value that is not a string
        raise SettingError(f"ini setting {ini}: {exc}; write the value as a string, e.g. {ini} = \"200\"") from None
    return (value, f"ini setting {ini}") if value else (None, None)


def source_of(config: Any, name: str) -> str:
    """Where setting ``name``'s value comes from, as errors name it (``environment variable GENAI_REPORT``)."""
    return _given_value(config, name)[1] or SETTINGS[name][0]


def resolve(config: Any, name: str) -> Any:
    """The value of setting ``name``: command line, then environment, then ini file, then the default."""
    parser, default = SETTINGS[name][3:]
    raw, where = _given_value(config, name)
    if raw is None or parser is None or not isinstance(raw, str):
        return default if raw is None else raw
    try:
        return parser(raw)
    except ValueError as exc:
        raise SettingError(f"{where}: {exc}") from None
