"""The run's output files: the real path behind ``--benchmark-json``, and the configure-time checks that an output
can be written (and is not one of the run's inputs), so a long benchmark run never ends by losing its results."""
from __future__ import annotations

import os
from typing import Any, Iterable

STDOUT = "-"


def benchmark_json_path(value: Any, base: str | os.PathLike) -> str | None:
    """The absolute path that ``--benchmark-json`` names, whatever pytest-benchmark stored for it: in 5.x
    ``argparse.FileType('wb')`` gives a binary file handle, opened at parse time, whose ``name`` is the path as the
    user typed it (relative to ``base``, the folder pytest was started in); a ``str`` or ``Path`` is taken whole
    (never ``Path.name``, which is only the last component). :data:`STDOUT` for ``-``; None when not given."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, os.PathLike)):
        raw: Any = os.fsdecode(value)
    else:  # a file object
        raw = getattr(value, "name", None)
        if isinstance(raw, bytes):
            raw = os.fsdecode(raw)
        if not isinstance(raw, str) or raw.startswith("<"):  # '<stdout>', or an fd number: no path to write
            return STDOUT
    if raw == STDOUT:
        return STDOUT
    return os.path.normpath(os.path.join(os.fspath(base), os.path.expanduser(raw)))


def output_file_problem(path: str) -> str | None:
    """None when ``path`` (absolute) can be written as a file, else what is wrong and how to fix it."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        return "is a folder; give a file path"
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            return f"{folder} is not a folder; choose another path"
        return f"the folder {folder} does not exist; create it first (mkdir -p {folder}) or choose another path"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable; choose a writable path"
    return None


def same_path(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are the same file (through symlinks and hard links), existing or not."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: compare where they would be
        return os.path.realpath(a) == os.path.realpath(b)


def clashing_input(output: str, inputs: Iterable[tuple[str, str | None]]) -> str | None:
    """The option of the first ``(option, path)`` in ``inputs`` that names the same file as ``output``."""
    for option, path in inputs:
        if path and path != STDOUT and same_path(output, path):
            return option
    return None
