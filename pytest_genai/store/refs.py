"""What a run argument of ``compare`` / ``gate`` names, in this order: an existing run file; ``NNNN`` / ``NNNN_name`` /
``storage:latest`` in pytest-benchmark's ``./.benchmarks``; else a store query (:mod:`.read`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from pytest_genai.results.storage import LATEST, is_storage_id, machine_id, resolve_storage_id
from pytest_genai.results.runs import Run, load_run

from .errors import StoreError
from .location import given_or_default
from .read import looks_like_query, query_run

STORAGE_PREFIX = "storage:"


def _storage_file(word: str) -> Path | None:
    """The run file of a pytest-benchmark storage id (``NNNN``, ``storage:...``); None for other words."""
    ident = word.removeprefix(STORAGE_PREFIX) if word.startswith(STORAGE_PREFIX) else (
        word if is_storage_id(word) and word != LATEST else None)
    return None if ident is None else resolve_storage_id(ident, None, machine_id(), os.getcwd())


def input_files(text: str, store_url: str | None) -> list[str]:
    """The files reading ``text`` reads, for refusing an output path that names one; [] where unresolved."""
    if Path(text).exists():
        return [text]
    try:
        if (stored := _storage_file(text.strip())) is not None:
            return [str(stored)]
        url = given_or_default(store_url) if looks_like_query(text.strip()) else ""
    except (StoreError, ValueError, OSError):
        return []
    return [url[len("sqlite:///"):]] if url.startswith("sqlite:///") else []


def file_content_hash(path: str) -> str | None:
    """The store's identity of the run file ``path`` (what ``store add`` would key it by), None if unreadable."""
    import json

    from .ingest import content_hash

    try:
        return content_hash(json.loads(Path(path).read_bytes().decode("utf-8-sig")))
    except (OSError, ValueError, RecursionError):  # loading the file names the problem
        return None


def load_ref(text: str, store_url: str | None, info: Mapping[str, Any] | None = None,
             exclude_hash: str | None = None) -> Run:
    """The run ``text`` names; ``exclude_hash`` as :func:`query_run` takes it."""
    if Path(text).exists():
        return load_run(text)
    word = text.strip()
    if (stored := _storage_file(word)) is not None:
        return load_run(stored)
    if looks_like_query(word):
        from .engine import open_store

        with open_store(given_or_default(store_url), create=False) as store:
            return query_run(store, word, info, exclude_hash)
    if not any(c in word for c in "/\\") and not word.endswith(".json"):
        raise StoreError(f"{text}: neither a run file, a pytest-benchmark storage id (0003, storage:latest) nor a "
                         "store query (generation=a100 latest, best, run=12)")
    return load_run(text)  # a missing file: the loader's message names it
