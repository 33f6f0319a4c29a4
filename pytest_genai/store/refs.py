"""What a run argument of ``compare`` / ``gate`` names: a run file, a run in pytest-benchmark's storage, or a store
query, in that order:

- an existing file: a ``--benchmark-json`` run;
- ``NNNN`` / ``NNNN_name`` / ``storage:latest``: a run saved by ``--benchmark-save`` / ``--benchmark-autosave`` in
  ``./.benchmarks`` (this machine's folder; ``storage:latest`` = the newest there);
- ``latest``, ``best``, ``key=value ...`` or ``store:...``: a store query (:mod:`.read`; ``latest`` = the newest
  matching run in the store).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from pytest_genai.report.benchmark_storage import LATEST, is_storage_id, machine_id, resolve_storage_id
from pytest_genai.report.runs import Run, load_run

from .errors import StoreError
from .read import looks_like_query, query_run

STORAGE_PREFIX = "storage:"


def load_ref(text: str, store_url: str | None, info: Mapping[str, Any] | None = None) -> Run:
    """The run ``text`` names (see the module); one line naming it and the three forms when it names none."""
    if Path(text).exists():
        return load_run(text)
    word = text.strip()
    if word.startswith(STORAGE_PREFIX) or (is_storage_id(word) and word != LATEST):
        ident = word[len(STORAGE_PREFIX):] if word.startswith(STORAGE_PREFIX) else word
        return load_run(resolve_storage_id(ident, None, machine_id(), os.getcwd()))
    if looks_like_query(word):
        from .engine import open_store
        from .location import default_url, normalize_url

        url = normalize_url(store_url) if store_url else default_url()
        with open_store(url, create=False) as store:
            return query_run(store, word, info)
    if not any(c in word for c in "/\\") and not word.endswith(".json"):
        raise StoreError(f"{text}: neither a run file, a pytest-benchmark storage id (0003, storage:latest) nor a "
                         "store query (generation=a100 latest, best, run=12)")
    return load_run(text)  # a missing file: the loader's message names it
