"""The published sources the suite ships (``reference/data``) and how to read each, or a newer copy of it.

Each entry names the repository, path, commit and commit date of the shipped copy; ``pytest-genai reference fetch``
downloads the newest copy of a source that still has an online file (``url``), and ``--file`` reads it instead.
"""
from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path
from typing import Callable

from pytest_genai.reference import nemo, optimum_habana
from pytest_genai.reference.row import Provenance, ReferenceRow


@dataclasses.dataclass(frozen=True)
class Source:
    name: str
    title: str
    repository: str
    path: str
    commit: str
    date: str
    packaged: str  # the shipped copy, under reference/data
    licence: str
    url: str | None  # the newest copy online; None where the publisher moved the numbers off the repository
    read: Callable[[str, Provenance], list[ReferenceRow]]

    def provenance(self, commit: str | None = None, date: str | None = None) -> Provenance:
        return Provenance(self.name, self.repository, self.path, commit or self.commit, 0, date or self.date)


def _read_optimum_habana(text: str, where: Provenance) -> list[ReferenceRow]:
    config = Provenance(where.source, where.repository, "tests/configs/examples/llama_7b.json",
                        "7e37a6eaae5f090bf1cbf8c38f24d9ec68d45f36", 0, "2025-04-11T23:29:20+02:00")
    configs = {"llama_7b": (json.loads(_packaged("optimum_habana/llama_7b.json")), config)}
    return optimum_habana.read_baselines(text, where, configs)


SOURCES = {
    "optimum-habana": Source(
        "optimum-habana", "optimum-habana CI baselines (Gaudi1, Gaudi2, Gaudi3)", "huggingface/optimum-habana",
        "tests/baselines/fixture/tests/test_examples.json", "d1863561db431182ce89ef70bd26b6d6d4372c61",
        "2025-08-21T10:27:38+02:00", "optimum_habana/test_examples.json", "Apache-2.0",
        "https://raw.githubusercontent.com/huggingface/optimum-habana/main/tests/baselines/fixture/tests/"
        "test_examples.json", _read_optimum_habana),
    "nemo": Source(
        "nemo", "NVIDIA NeMo performance summary (NeMo 24.07, DGX-H100)", "NVIDIA/NeMo",
        "docs/source/performance/performance_summary.md", "8e3d65dcfe3504689bfc5b6e67d502780aacad41",
        "2024-09-09T10:01:01-07:00", "nemo/performance_summary.md", "Apache-2.0", None, nemo.read_summary),
}


class UnknownSourceError(ValueError):
    """A source name the suite does not know."""


def get(name: str) -> Source:
    if name not in SOURCES:
        raise UnknownSourceError(f"reference source {name!r} is unknown; use one of {', '.join(SOURCES)}")
    return SOURCES[name]


def _packaged(relative: str) -> str:
    return resources.files("pytest_genai.reference").joinpath("data", relative).read_text(encoding="utf-8")


def load(name: str, file: str | Path | None = None, commit: str | None = None) -> list[ReferenceRow]:
    """The rows of source ``name``: its shipped copy, or ``file`` (a newer copy; ``commit`` names its version)."""
    source = get(name)
    if file is None:
        return source.read(_packaged(source.packaged), source.provenance())
    text = Path(file).read_text(encoding="utf-8")
    return source.read(text, source.provenance(commit or "unknown (a local copy)", "unknown"))


def load_all() -> list[ReferenceRow]:
    return [row for name in SOURCES for row in load(name)]


def fetch(name: str, dest: str | Path, timeout_s: float = 30.0) -> Path:
    """Download the newest online copy of source ``name`` to ``dest``; read it with ``load(name, dest)``."""
    import urllib.request

    source = get(name)
    if source.url is None:
        raise UnknownSourceError(f"reference source {name!r} has no online file any more ({source.repository} "
                                 f"removed {source.path} after {source.commit[:12]}); the shipped copy is the last")
    with urllib.request.urlopen(source.url, timeout=timeout_s) as response:  # noqa: S310 - a fixed https URL
        data = response.read()
    out = Path(dest)
    out.write_bytes(data)
    return out
