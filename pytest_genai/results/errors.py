"""Exit codes and the one exception type the report commands turn into a message."""

from __future__ import annotations

EXIT_OK = 0
"""No regression (gate), or the command did what it was asked."""
EXIT_REGRESSION = 1
"""``gate``: at least one metric regressed beyond its threshold or a claim failed."""
EXIT_BAD_INPUT = 2
"""A file could not be read or understood, an option was malformed, or there was nothing to compare."""
EXIT_UNDECIDED = 3
"""``gate``: nothing regressed, but a row whose change is past its threshold could not be decided (noise, contention);
``--allow-undecided`` makes it 0."""


class ReportInputError(ValueError):
    """An input the report commands cannot use; the message names the input and how to fix it."""
