"""What a benchmark is (its identity) and where and how it ran (its environment).

``compare`` and ``gate`` pair two runs' benchmarks by (experiment, config, model).  A config
as a benchmark writes it mixes two kinds of facts:

* **identity** — what the workload is: model, task, examples, sequence length, batch,
  precision plan, scale, world size of a scaling run, the data's identity (dataset, split,
  sha256).  Two runs with the same identity did the same work and are paired.
* **environment** — where and how it ran on this machine: local paths (the data file, the
  model folder, cache and working folders), the host's CPU thread count, how ranks were
  placed on nodes, devices, where the data came from (``data_origin``).  Two runs that differ
  only here are the same benchmark run elsewhere; the difference is shown, never used to pair.

:func:`split_config` makes the split by three rules, applied to every key at every depth:

1. a key named in :data:`ENVIRONMENT_KEYS` is environment (``nproc`` / ``nnodes`` only next
   to a ``world_size``, which then is the workload's size and stays identity);
2. a key that names a location (:data:`LOCATION_KEYS`, or ending in ``_dir``, ``_path``,
   ``_folder``, ``_file``) is environment unless its value is a remote reference such as
   ``hub:Salesforce/wikitext`` or ``hf://...`` (that names the data, not a folder);
3. any string that looks like a local path (``/...``, ``~...``, ``./...``, ``../...``, ``C:\\...``,
   ``\\\\server\\...``, ``file:...``), under any key, is environment — a path is never identity.

Everything else is identity.  The recorder (``genai.start``) writes both halves into the JSON
(``config`` and ``environment``); the report reader applies the same split again, so files
written before the split (no ``environment``) pair with new ones.  The key-by-key decision
table for the suite's benchmarks is in ``docs/report.md``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterator, Mapping

ENVIRONMENT_KEYS: Mapping[str, str] = MappingProxyType({
    # threads and processes of this host
    "threads": "CPU threads the run pinned (evaluation default: OMP_NUM_THREADS or every core of the host)",
    "num_threads": "CPU threads of the host",
    "torch_threads": "CPU threads of the host",
    "interop_threads": "CPU threads of the host",
    "omp_num_threads": "CPU threads of the host",
    "cpu_count": "cores of the host",
    "cores": "cores of the host",
    "nproc": "ranks per node: how the world_size ranks were placed on machines (only next to world_size)",
    "nproc_per_node": "ranks per node (only next to world_size)",
    "nnodes": "machines the world_size ranks ran on (only next to world_size)",
    "node_rank": "this machine's place in a multi-node job",
    "local_rank": "a rank's place on its machine",
    "rdzv_endpoint": "rendezvous host:port of a multi-node job",
    "rdzv_id": "rendezvous job id",
    "master_addr": "rendezvous host",
    "master_port": "rendezvous port",
    "hostname": "the machine's name",
    "host": "the machine's name",
    "pid": "a process id",
    "timeout": "how long the run was allowed to take",
    "timeout_s": "how long the run was allowed to take",
    # devices
    "devices": "the devices this machine exposed",
    "device_ids": "the devices this machine exposed",
    "visible_devices": "the devices this machine exposed",
    "cuda_visible_devices": "the devices this machine exposed",
    # where data and files came from (the data's identity is dataset + split + sha256)
    "data_origin": "where the data was read from: embedded slice, data folder or HF cache (the sha256 says what it is)",
    "cwd": "the working folder",
})
"""Config keys that describe where or how a benchmark ran, never what it is (key → why)."""

_NEXT_TO_WORLD_SIZE = frozenset({"nproc", "nproc_per_node", "nnodes"})
"""Environment only when the same mapping records ``world_size`` (the workload's size); alone they are the size."""

LOCATION_KEYS = frozenset({
    "data_source", "data_dir", "data_root", "model_path", "text_path", "cache_dir", "hf_home", "hf_cache",
    "hf_datasets_cache", "torch_home", "triton_cache_dir", "tmp_dir", "tmp_path", "work_dir", "workdir",
    "working_dir", "output_dir", "out_dir", "log_dir", "path", "dir", "folder", "root",
})
"""Keys whose value names a place: environment unless the value is a remote reference (see :func:`is_remote_ref`)."""
LOCATION_SUFFIXES = ("_dir", "_path", "_folder", "_file")

_REMOTE = re.compile(r"^(?:hub|hf|hf-hub):|^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def looks_like_local_path(value: Any) -> bool:
    """True for a string that names a place on some machine's disk (absolute, home- or dot-relative, Windows, UNC,
    ``file:``).  ``bf16/int8`` or ``hub:Salesforce/wikitext`` are not paths."""
    if not isinstance(value, str) or not value:
        return False
    if value.startswith(("/", "~", "./", "../", ".\\", "..\\", "\\\\")) or value in (".", ".."):
        return True
    if value.lower().startswith("file:"):
        return True
    return bool(_WINDOWS_DRIVE.match(value))


def is_remote_ref(value: Any) -> bool:
    """A reference that names the same thing on every machine: ``hub:<dataset>``, ``hf://...``, ``https://...``."""
    return isinstance(value, str) and not value.lower().startswith("file:") and bool(_REMOTE.match(value))


def is_location_key(key: str) -> bool:
    k = key.lower()
    return k in LOCATION_KEYS or k.endswith(LOCATION_SUFFIXES)


def _contains_local_path(value: Any) -> bool:
    if isinstance(value, str):
        return looks_like_local_path(value)
    if isinstance(value, Mapping):
        return any(_contains_local_path(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_local_path(v) for v in value)
    return False


def environment_reason(key: str, value: Any, siblings: Mapping[str, Any] = MappingProxyType({})) -> str | None:
    """Why ``key: value`` (in a mapping with ``siblings``) is environment, or None when it is identity."""
    k = key.lower()
    if k in ENVIRONMENT_KEYS and (k not in _NEXT_TO_WORLD_SIZE or "world_size" in siblings):
        return ENVIRONMENT_KEYS[k]
    if is_location_key(key) and value is not None and not is_remote_ref(value):
        return "names a place on this machine"
    if not isinstance(value, Mapping) and _contains_local_path(value):
        return "a local path (a path is never part of a benchmark's identity)"
    return None


@dataclass(frozen=True)
class Split:
    """A config split into what the benchmark is and where it ran."""

    identity: dict[str, Any]
    environment: dict[str, Any]


def split_config(config: Mapping[str, Any]) -> Split:
    """Split a JSON config (nested mappings allowed) into identity and environment (pure; see the module's rules).

    A nested mapping is split key by key: ``{"workload": {"threads": 4, "batch": 8}}`` gives identity
    ``{"workload": {"batch": 8}}`` and environment ``{"workload": {"threads": 4}}``.
    """
    identity: dict[str, Any] = {}
    environment: dict[str, Any] = {}
    for key, value in config.items():
        key = str(key)
        if environment_reason(key, value, config) is not None:
            environment[key] = value
        elif isinstance(value, Mapping):
            inner = split_config(value)
            identity[key] = inner.identity
            if inner.environment:
                environment[key] = inner.environment
        else:
            identity[key] = value
    return Split(identity, environment)


def merge_environment(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """Environment mappings merged left to right (nested mappings merged, later values win)."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
                out[key] = merge_environment(out[key], value)
            else:
                out[key] = value
    return out


def split_model(model: str | None) -> tuple[str | None, dict[str, Any]]:
    """A model given as a local folder is named by its last part; the folder goes to the environment."""
    if model is None or not looks_like_local_path(model):
        return model, {}
    name = re.split(r"[\\/]", model.rstrip("/\\"))[-1] or model
    return name, {"model_path": model}


def identity_key(config: Mapping[str, Any]) -> str:
    """Canonical text of a config's identity (sorted keys): what benchmarks are matched on across runs."""
    return json.dumps(split_config(config).identity, sort_keys=True, separators=(",", ":"), default=str)


# -- showing differences, never paths ---------------------------------------------------------------------------

def basename(path: str) -> str:
    """The last part of a local path (``/data/wikitext-2-raw-v1/test.raw`` → ``test.raw``)."""
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return parts[-1] if parts else path


def _flat(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _flat(value, name + ".")
        else:
            yield name, value


def shown(key: str, value: Any) -> str:
    """A config value as reports show it: a local path by its last part, a sha256 by its first 12 digits."""
    if value is None:
        return "—"
    if isinstance(value, str) and looks_like_local_path(value):
        return basename(value)
    if isinstance(value, (list, tuple)) and _contains_local_path(value):
        return "[" + ", ".join(shown(key, v) for v in value) + "]"
    if key.rsplit(".", 1)[-1].lower() == "sha256" and isinstance(value, str):
        return value[:12]
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return str(value)


def _is_place(key: str, value: Any, locations: bool) -> bool:
    if not isinstance(value, str):
        return False
    if looks_like_local_path(value):
        return True
    return locations and is_location_key(key.rsplit(".", 1)[-1]) and not is_remote_ref(value)


def differences(baseline: Mapping[str, Any], current: Mapping[str, Any], *, locations: bool = False) -> list[str]:
    """One line per differing key, e.g. ``threads 2 -> 16``, ``data_source: folder differs (test.raw)``.

    Local paths are shown by their last part only; two paths with the same last part are "folder differs".
    ``locations``: values of location keys are places even when they do not look like a path (environment).
    """
    a, b = dict(_flat(baseline)), dict(_flat(current))

    def text(key: str, value: Any) -> str:
        return basename(value) if _is_place(key, value, locations) else shown(key, value)

    out = []
    for key in list(a) + [k for k in b if k not in a]:
        va, vb = a.get(key), b.get(key)
        if va == vb and (key in a) == (key in b):
            continue
        if key in a and key not in b:
            out.append(f"{key} {text(key, va)} -> (not recorded)")
        elif key in b and key not in a:
            out.append(f"{key} (not recorded) -> {text(key, vb)}")
        elif _is_place(key, va, locations) and _is_place(key, vb, locations) and basename(va) == basename(vb):
            out.append(f"{key}: folder differs ({basename(va)})")
        else:
            out.append(f"{key} {text(key, va)} -> {text(key, vb)}")
    return out


def environment_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between two environments of one paired benchmark (no local path is ever shown whole)."""
    return differences(baseline, current, locations=True)


DATA_IDENTITY_KEYS = ("dataset", "split", "sha256")
"""The data's identity as the evaluation data records it (with ``data_origin`` in the environment)."""


def data_label(identity: Mapping[str, Any], environment: Mapping[str, Any]) -> str | None:
    """How reports name a benchmark's data: ``dataset/split @sha256[:12]`` where recorded, else a remote
    reference (``hub:...``) as given, else the last part of the local data file; None when there is no data."""
    dataset, split, sha = (identity.get(k) for k in DATA_IDENTITY_KEYS)
    if dataset:
        text = f"{dataset}/{split}" if split else str(dataset)
        return f"{text} @{str(sha)[:12]}" if sha else text
    source = identity.get("data_source")
    if isinstance(source, str) and source:
        return source
    local = environment.get("data_source")
    if isinstance(local, str) and local:
        return basename(local)
    return f"sha256 {str(sha)[:12]}" if sha else None
