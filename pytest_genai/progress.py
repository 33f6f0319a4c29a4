"""Progress for long benchmarks: ``logging`` lines and, on a terminal, tqdm bars.

Every step of a long run (a model load or conversion, an evaluation task, a quantizer's timed round, a training
run) logs one INFO line through the ``pytest_genai`` logger, so ``--log-cli-level=INFO`` shows it as it happens and
a failing test's captured log says how far it got. Bars are drawn only where someone can see them: tqdm is
installed, pytest does not capture the output (``-s``) and stderr is a terminal. Nothing here imports torch.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Any, Iterable, Iterator, TypeVar

LOGGER_NAME = "pytest_genai"
T = TypeVar("T")


def logger(module: str | None = None) -> logging.Logger:
    """The suite's logger, or a child of it for ``module`` (``pytest_genai.evals.models`` -> ``pytest_genai.evals``
    stays one tree, so one ``--log-cli-level`` shows every part)."""
    if not module or module == LOGGER_NAME:
        return logging.getLogger(LOGGER_NAME)
    if module.startswith(LOGGER_NAME + "."):
        return logging.getLogger(module)
    return logging.getLogger(f"{LOGGER_NAME}.{module}")


def bars_enabled(stream: Any = None) -> bool:
    """True when a tqdm bar would be seen: tqdm imports and ``stream`` (default ``sys.stderr``) is a terminal.
    Under pytest's output capture stderr is a capture buffer, not a terminal, so bars appear only with ``-s``."""
    stream = sys.stderr if stream is None else stream
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):  # closed or unusual streams
        return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def steps(items: Iterable[T], desc: str, *, total: int | None = None, unit: str = "it",
          log: logging.Logger | None = None, level: int = logging.INFO) -> Iterator[T]:
    """Iterate ``items``, logging the start and the end (with the time taken) at ``level`` and drawing a tqdm bar
    when :func:`bars_enabled`. ``total`` defaults to ``len(items)`` where it has one. Inner loops that run many
    times per test log at DEBUG and keep their bar."""
    log = log or logger()
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    count = f"{total} {unit}" if total is not None else unit
    log.log(level, "%s: %s ...", desc, count)
    start = time.perf_counter()
    iterable: Iterable[T] = items
    if bars_enabled():
        from tqdm import tqdm

        iterable = tqdm(items, desc=desc, total=total, unit=unit, leave=False, file=sys.stderr)
    done = 0
    for item in iterable:
        yield item
        done += 1
    log.log(level, "%s: %d %s done in %.1f s", desc, done, unit, time.perf_counter() - start)


@contextlib.contextmanager
def phase(desc: str, *, log: logging.Logger | None = None, hint: str = "") -> Iterator[None]:
    """Log ``desc`` when a long step starts (with ``hint``, e.g. "once, ~20 s") and when it ends, with its time."""
    log = log or logger()
    log.info("%s%s ...", desc, f" ({hint})" if hint else "")
    start = time.perf_counter()
    try:
        yield
    except BaseException:
        log.info("%s: stopped after %.1f s", desc, time.perf_counter() - start)
        raise
    log.info("%s: done in %.1f s", desc, time.perf_counter() - start)
