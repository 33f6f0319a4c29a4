"""How contended the CPU was while a benchmark measured: Linux's pressure stall information (PSI).

``/proc/pressure/cpu`` counts, in microseconds, the time during which at least one runnable task waited for a CPU
(the ``some`` line's ``total``). Its growth over a measurement, divided by the measurement's wall time, is the share
of that time the machine was oversubscribed (near 0 on an idle machine, about half or more beside CPU-heavy jobs).
A timing claim measured on a contended machine says little
about the hardware, so :func:`pytest_genai.claims.check.check_value` neither passes nor fails one above
:data:`pytest_genai.claims.check.CONTENDED_SHARE`: it reads ``inconclusive`` and says the share.

Nothing here is heavy to import. Without PSI (not Linux, a kernel without ``CONFIG_PSI``, ``psi=0``) every reading
is None and verdicts are unchanged.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

PSI_CPU = "/proc/pressure/cpu"
METHOD = "share of wall time with a task waiting for a CPU (/proc/pressure/cpu 'some' total)"


def stall_us(path: str | None = None) -> int | None:
    """Microseconds of CPU ``some`` stall since boot (from ``path``, default :data:`PSI_CPU`), or None where the
    kernel does not report it."""
    try:
        with open(PSI_CPU if path is None else path, encoding="ascii") as fh:
            text = fh.read()
    except OSError:
        return None
    return parse_some_total(text)


def parse_some_total(text: str) -> int | None:
    """The ``total=`` of the ``some`` line of a PSI file (None when absent or malformed)."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "some":
            for field in fields[1:]:
                key, _, value = field.partition("=")
                if key == "total" and value.isdigit():
                    return int(value)
    return None


def stall_share(stall_before_us: int, stall_after_us: int, wall_s: float) -> float:
    """Share of ``wall_s`` seconds during which a task waited for a CPU, in [0, 1]."""
    if wall_s <= 0:
        raise ValueError(f"wall time must be positive, got {wall_s!r}")
    if stall_after_us < stall_before_us:
        raise ValueError(f"the PSI stall total went backwards ({stall_before_us} -> {stall_after_us})")
    return min(1.0, (stall_after_us - stall_before_us) / 1e6 / wall_s)


@dataclasses.dataclass(frozen=True)
class Window:
    """A measurement window, opened when a test's ``genai`` fixture is set up; :meth:`reading` reads it up to now."""

    stall_us: int | None
    wall_s: float

    @classmethod
    def open(cls, path: str | None = None) -> "Window":
        return cls(stall_us(path), time.monotonic())

    def reading(self, path: str | None = None) -> dict[str, Any] | None:
        """``{"stall_share_measured": x, "window_s": s, "method": ...}`` from the window's start to now, or None
        without PSI."""
        now_stall, now = stall_us(path), time.monotonic()
        if self.stall_us is None or now_stall is None or now <= self.wall_s:
            return None
        return {"stall_share_measured": round(stall_share(self.stall_us, now_stall, now - self.wall_s), 4),
                "window_s": round(now - self.wall_s, 3), "method": METHOD}
