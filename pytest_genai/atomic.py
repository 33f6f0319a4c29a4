"""Atomic file writes: write a temporary file in the same folder, flush it to disk, then rename over the target.

The file gets the mode a plain ``open(path, "w")`` would leave: an existing target keeps its mode, a new one gets
``0666 & ~umask`` (``tempfile.mkstemp`` alone creates 0600, so reports and JSON ended up readable by their owner
only)."""
from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from collections.abc import Iterator
from typing import Any


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """``with atomic_path(target) as tmp:`` write ``tmp`` (for writers that take a file name, e.g. safetensors'
    ``save_file``); when the block succeeds the file is flushed to disk and renamed over ``target``; when it raises,
    ``tmp`` is removed and ``target`` is left as it was. A ``target`` that is a symbolic link is written through: the
    file it points to is replaced, the link stays (renaming over the link replaced it with a regular file)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)  # after the writer: one that replaces the file it was given would drop an earlier chmod
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=4, sort_keys=False, default=str) + "\n")
