"""The run's output files: ``--benchmark-json``'s real path, and start-time checks that an output can be written."""
from __future__ import annotations

import io
import os
from typing import Any, Iterable

STDOUT = "-"


def benchmark_json_path(value: Any, base: str | os.PathLike) -> str | None:
    """The absolute path ``--benchmark-json`` names (a path, or a handle named relative to ``base``), or STDOUT."""
    if value is None:
        return None
    name = getattr(value, "name", None)  # a file object's
    if isinstance(value, (str, bytes, os.PathLike)):
        raw = os.fsdecode(value)
    elif not isinstance(name, (str, bytes)) or os.fsdecode(name).startswith("<"):  # '<stdout>', an fd: no path
        return STDOUT
    else:
        raw = os.fsdecode(name)
    return STDOUT if raw == STDOUT else os.path.normpath(os.path.join(os.fspath(base), os.path.expanduser(raw)))


def output_file_problem(path: str) -> str | None:
    """None when ``path`` (absolute) can be written as a file, else what is wrong and how to fix it."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        return "is a folder; give a file path"
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"{folder} is not a folder; choose another path"
    if not os.path.isdir(folder):
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


def node_path(raw: str, env: Any = None) -> str:
    """``{node}`` in an output path becomes this node's rank (``SLURM_NODEID``, ``NODE_RANK``, else 0)."""
    if "{node}" not in raw:
        return raw
    from pytest_genai.runtime.slurm import node_label

    return raw.replace("{node}", node_label(os.environ if env is None else env))


class AtomicJsonOutput:
    """``--benchmark-json PATH``'s type instead of ``argparse.FileType('wb')``, which truncates the file at start-up:
    the file is replaced atomically at the end, so a killed run never leaves a 0-byte file."""

    def __init__(self, raw: str) -> None:
        self.name = raw  # as typed, like a file object's name
        self.path = os.path.abspath(os.path.expanduser(raw))
        self._buffer = io.BytesIO()

    @classmethod
    def from_arg(cls, raw: str) -> Any:
        if raw == STDOUT:
            import argparse

            return argparse.FileType("wb")(raw)
        return cls(node_path(raw))

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return self.name

    def __enter__(self) -> "AtomicJsonOutput":
        self._buffer = io.BytesIO()
        return self

    def write(self, data: bytes) -> int:
        return self._buffer.write(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self._buffer.tell():
            from pytest_genai.atomic import write_bytes_atomic

            write_bytes_atomic(self.path, self._buffer.getvalue())
        self._buffer = io.BytesIO()

    def __exit__(self, exc_type: Any, *rest: Any) -> None:  # None: an exception propagates
        if exc_type is None:
            self.close()
        self._buffer = io.BytesIO()


def make_benchmark_json_atomic(parser: Any) -> bool:
    """Swap ``--benchmark-json``'s argparse type for :class:`AtomicJsonOutput` (True when the option was found)."""
    for action in getattr(getattr(parser, "optparser", None), "_actions", ()):
        if "--benchmark-json" in action.option_strings:
            action.type = AtomicJsonOutput.from_arg
            return True
    return False
