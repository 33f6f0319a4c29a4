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
        for inp in ins:
            if _same_file(Path(out), inp):
                raise ReportInputError(
                    f"{option} {out}: is the input file {inp}; writing there would destroy it — choose another output path"
                )


def write_output(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:mod:`pytest_genai.atomic`: an existing file keeps its mode,
    a new one gets ``0666 & ~umask``), through a symlink: the file it points to is replaced and the link kept."""
    write_text_atomic(Path(path).resolve(), text)
    return Path(path)
