"""Writing the commands' output files: never over an input, atomically, with the permissions a user expects."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

from pytest_genai.atomic import write_text_atomic
from pytest_genai.results.errors import ReportInputError

MAX_STEM_CHARS = 96  # well under the file systems' 255 bytes


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they would be
        return a.resolve() == b.resolve()


def file_stem(*parts: str) -> str:
    """A file name (no suffix) from names: never a path nor hidden, at most MAX_STEM_CHARS (hash-suffixed if cut)."""
    text = "_".join(p for p in parts if p)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "plot"
    if len(stem) > MAX_STEM_CHARS:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = stem[:MAX_STEM_CHARS - 9].rstrip("-.") + "-" + digest
    return stem


class NameAllocator:
    """One command's output file names in a folder, each handed out once (``-2``, ``-3``...), compared case-folded."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = {r.casefold() for r in reserved}

    def __contains__(self, name: str) -> bool:
        return name.casefold() in self._taken

    def take(self, stem: str) -> str:
        name, n = stem + ".png", 1
        while name.casefold() in self._taken:
            n += 1
            name = f"{stem}-{n}.png"
        self._taken.add(name.casefold())
        return name


def names_in(folder: str | os.PathLike[str], paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The file names of those ``paths`` that lie directly in ``folder``."""
    where = Path(folder).resolve()
    return [Path(p).name for p in paths if Path(p).resolve().parent == where]


def check_distinct(outputs: Sequence[tuple[str, str | os.PathLike[str]]]) -> None:
    """Raise :class:`ReportInputError` when two ``(option, path)`` outputs of one command are one file."""
    for i, (opt_a, a) in enumerate(outputs):
        for opt_b, b in outputs[i + 1:]:
            if _same_file(Path(a), Path(b)):
                raise ReportInputError(f"{opt_b} {b}: is also the {opt_a} output {a}; one would replace the other — "
                                       "give each output its own path")


def check_outputs(outputs: Iterable[str | os.PathLike[str]], inputs: Iterable[str | os.PathLike[str]],
                  option: str = "-o", example: str = "report.md") -> None:
    """Raise :class:`ReportInputError` when an output is (through links) an input, a folder or under a file."""
    ins = [Path(i) for i in inputs]
    for out in outputs:
        if Path(out).is_dir():  # refused now, naming the user's path (not the temp file the writer would use)
            raise ReportInputError(f"{option} {out}: is a folder; give a file path, e.g. {Path(out) / example}")
        parent = next((p for p in Path(out).parents if p.exists()), None)  # missing folders are created
        if parent is not None and not parent.is_dir():
            raise ReportInputError(f"{option} {out}: {parent} is a file, not a folder; choose another output path")
        for inp in ins:
            if _same_file(Path(out), inp):
                raise ReportInputError(f"{option} {out}: is the input file {inp}; writing there would destroy it — "
                                       "choose another output path")


def write_output(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; through a symlink, the file it points to is replaced."""
    try:
        write_text_atomic(Path(path).resolve(), text)
    except OSError as exc:  # name the path the user gave, never the writer's temp file beside it
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    return Path(path)
