"""pytest-benchmark storage ids as baselines (``--genai-baseline 0003``, ``latest``): the words ``--benchmark-compare``
takes, resolved as pytest-benchmark does to one ``<storage>/<machine_id>/NNNN_<name>.json``; ``file://`` only."""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import ReportInputError

DEFAULT_STORAGE = "file://./.benchmarks"
LATEST = "latest"
_ID = re.compile(r"[0-9]{4}(?:_[^/\\]*)?")
_RUN_GLOB = "[0-9][0-9][0-9][0-9]_*.json"


def is_storage_id(text: str | None) -> bool:
    """``latest``, a run number ``0003``, or a longer prefix of a saved run's file name (``0003_mysave``)."""
    return bool(text) and (text.strip() == LATEST or bool(_ID.fullmatch(text.strip())))


def resolve_storage_id(ident: str, storage: str | None, machine_id: str, cwd: str | os.PathLike[str]) -> Path:
    """The saved run that ``ident`` names (see the module); one line naming the storage folder when there is none."""
    ident, url = ident.strip(), str(storage or DEFAULT_STORAGE)
    url = url if "://" in url else "file://" + url
    if not url.startswith("file://"):
        raise ReportInputError(f"--benchmark-storage {url}: only file:// storage can hold a --genai-baseline run; "
                               "give the run's JSON file instead")
    folder = (Path(cwd) / os.path.expanduser(url[len("file://"):]) / machine_id).resolve()
    runs = sorted(folder.glob(_RUN_GLOB), key=lambda p: p.name) if folder.is_dir() else []
    held = ", ".join(p.name for p in runs[-5:]) if runs else "no saved runs"
    hint = "save runs with --benchmark-autosave or --benchmark-save NAME, or give a --benchmark-json file"
    if ident == LATEST:
        if not runs:
            raise ReportInputError(f"latest: pytest-benchmark's storage {folder} holds no saved runs; {hint}")
        return runs[-1]
    matches = [p for p in runs if p.name.startswith(ident)]
    if not matches:
        raise ReportInputError(f"{ident}: no run {ident} in pytest-benchmark's storage {folder} ({held}); {hint}")
    if len(matches) > 1:
        raise ReportInputError(f"{ident}: names {len(matches)} runs in {folder} ({', '.join(p.name for p in matches)}); "
                               "give the whole file name prefix, e.g. 0003_mysave")
    return matches[0]


def machine_id() -> str:
    """pytest-benchmark's name for this machine's folder (``Linux-CPython-3.11-64bit``)."""
    from pytest_benchmark.utils import get_machine_id

    return get_machine_id()
