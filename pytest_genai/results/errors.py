"""Exit codes and the one exception type the report commands turn into a message."""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1  # gate: a metric regressed beyond its threshold or a claim failed
EXIT_BAD_INPUT = 2  # unreadable input, a malformed option, or nothing to compare
EXIT_UNDECIDED = 3  # gate: nothing regressed, but a change past its threshold could not be decided


class ReportInputError(ValueError):
    """An input the report commands cannot use; the message names the input and how to fix it."""
