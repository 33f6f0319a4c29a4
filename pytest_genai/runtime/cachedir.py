"""The folder pytest-genai caches into (converted models, compiled kernels): ``$PYTEST_GENAI_CACHE``, else
``$XDG_CACHE_HOME/pytest-genai``, else ``~/.cache/pytest-genai``."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("PYTEST_GENAI_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-genai"
