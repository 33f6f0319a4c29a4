"""The one error type of the store: a message naming the store (or the input) and how to fix it."""
from __future__ import annotations

from pytest_genai.results.errors import ReportInputError


class StoreError(ReportInputError):
    """A store that cannot be opened, read or written, or a query it cannot answer (the commands exit 2)."""
