"""Writing the commands' output files: never over an input, atomically, with the permissions a user expects."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from pytest_genai.atomic import write_text_atomic

from .errors import ReportInputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would be
        return a.resolve() == b.resolve()


def check_outputs(outputs: Iterable[str | os.PathLike[str]], inputs: Iterable[str | os.PathLike[str]],
                  option: str = "-o") -> None:
    """Raise :class:`ReportInputError` when an output path is (resolving symlinks and hard links) an input file."""
    ins = [Path(i) for i in inputs]
    for out in outputs:
        if Path(out).is_dir():  # refused now, naming the user's path (not the temp file the writer would use)
            raise ReportInputError(f"{option} {out}: is a folder; give a file path, e.g. {Path(out) / 'report.md'}")
        parent = next((p for p in Path(out).parents if p.exists()), None)  # missing folders are created
        if parent is not None and not parent.is_dir():
            raise ReportInputError(f"{option} {out}: {parent} is a file, not a folder; choose another output path")
        for inp in ins:
            if _same_file(Path(out), inp):
                raise ReportInputError(
                    f"{option} {out}: is the input file {inp}; writing there would destroy it — choose another output path"
                )


def write_output(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:mod:`pytest_genai.atomic`: an existing file keeps its mode,
    a new one gets ``0666 & ~umask``), through a symlink: the file it points to is replaced and the link kept."""
    try:
        write_text_atomic(Path(path).resolve(), text)
    except OSError as exc:  # name the path the user gave, never the writer's temp file beside it
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    return Path(path)
