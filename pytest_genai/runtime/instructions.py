"""Instructions one step of a CPU code path executes, counted by valgrind: a statistic that a CPU load beside the
run does not move (on a shared VM a load moves the wall clock, the thread's CPU clock and the fastest step alike,
and the guest has no hardware counter: ``perf_event_open`` answers ENOENT).

One launch measures ``rounds`` rounds. A worker (this module run with ``-m``) builds the step from a factory
(``"module:attr"`` or ``"path/to/file.py:attr"``, called with JSON keyword arguments), runs ``warmup`` steps, then
calls ``os.getpgrp()`` before each round of ``steps`` steps and after the last. It runs under
``valgrind --tool=callgrind --dump-before=getpgrp``, which writes its instruction counter at every such call, so each
round's count is read from its own dump: the interpreter's start, the imports and the build (with torch, about
4.9e9 instructions, half a minute under valgrind) are left out exactly, in one launch, with no subtraction of two
launches (cachegrind, valgrind 3.19's other counter, has no way to mark a region). ``PYTHONHASHSEED`` is fixed and
one thread computes, so a launch repeats what the last one executed.

The count is of the code valgrind's virtual CPU runs: libraries that pick kernels by CPUID see valgrind's CPU
(AVX2, no AVX-512), so a count compares code with code on the same valgrind and library build, never with a clock.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = "getpgrp"
"""The libc call that marks a round's edges: nothing in a step calls it, and Python reaches it as ``os.getpgrp()``."""

MISSING = "valgrind not found on PATH: install valgrind (Debian: apt-get install valgrind) to count instructions"

_SUMMARY = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


class InstructionCountError(RuntimeError):
    """valgrind is absent, the worker failed or hung, or its dumps are not one per round."""


@dataclass(frozen=True)
class InstructionCount:
    """One launch's rounds: each round's instructions per step (``per_step``), and what the launch cost."""

    per_step: tuple[float, ...]
    steps: int
    warmup: int
    before_rounds: int
    """Instructions before the first round: the interpreter's start, imports, the step's build and warm-up."""
    wall_s: float
    tool: str
    factory: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return sum(self.per_step) / len(self.per_step)

    def to_json(self) -> dict[str, Any]:
        return {"per_step": list(self.per_step), "steps": self.steps, "warmup": self.warmup,
                "before_rounds": self.before_rounds, "wall_s": self.wall_s, "tool": self.tool,
                "factory": self.factory, "kwargs": dict(self.kwargs)}


def valgrind_path() -> str:
    """valgrind's path, or :class:`InstructionCountError` with the one line that says how to install it."""
    path = shutil.which("valgrind")
    if path is None:
        raise InstructionCountError(MISSING)
    return path


def count_step_instructions(factory: str, kwargs: Mapping[str, Any] | None = None, *, steps: int = 10,
                            rounds: int = 5, warmup: int = 5, timeout_s: float = 900.0,
                            python: str | None = None) -> InstructionCount:
    """Count the instructions of ``rounds`` rounds of ``steps`` steps of the step ``factory(**kwargs)`` builds, after
    ``warmup`` steps, in one valgrind launch killed (its whole process group) past ``timeout_s`` or on any error or
    interrupt here; its parent-death signal kills it if this thread dies."""
    from pytest_genai.runtime.processes import SigtermAsInterrupt, die_with_parent

    if steps < 1 or rounds < 1 or warmup < 0:
        raise ValueError(f"steps and rounds must be >= 1 and warmup >= 0, got {steps}, {rounds}, {warmup}")
    valgrind = valgrind_path()
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    # a fixed hash seed and one thread: a launch executes what the last one did
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    args = json.dumps(dict(kwargs or {}))
    with tempfile.TemporaryDirectory(prefix="genai-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [valgrind, "--tool=callgrind", f"--dump-before={MARKER}", f"--callgrind-out-file={out}",
               python or sys.executable, "-m", __name__, factory, args, str(warmup), str(steps), str(rounds)]
        log = Path(tmp) / "valgrind.log"
        start = time.monotonic()
        with open(log, "wb") as sink, SigtermAsInterrupt():
            proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=die_with_parent())
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill(proc)
                raise InstructionCountError(f"valgrind count of {factory} timed out after {timeout_s:g} s; "
                                            "it was killed") from None
            except BaseException:
                _kill(proc)
                raise
            finally:
                _kill(proc)  # anything the worker left in its group
        wall = time.monotonic() - start
        text = log.read_text(errors="replace")
        if code != 0:
            tail = "\n".join(text.splitlines()[-15:])
            raise InstructionCountError(f"valgrind count of {factory} exited {code}:\n{tail}")
        tool = next((line.split("Using ", 1)[1].split(" and", 1)[0] for line in text.splitlines()
                     if "Using Valgrind-" in line), "valgrind") + " callgrind"
        dumps = _dumps(Path(tmp), out.name)
    if len(dumps) != rounds + 1:
        raise InstructionCountError(f"expected {rounds + 1} callgrind dumps (one per {MARKER}() call), got "
                                    f"{len(dumps)}: something in the step calls {MARKER}")
    return InstructionCount(tuple(d / steps for d in dumps[1:]), steps, warmup, dumps[0], wall, tool, factory,
                            dict(kwargs or {}))


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _dumps(folder: Path, stem: str) -> list[int]:
    """The instruction totals of the numbered dumps ``stem.1``, ``stem.2``, ... in order (the unnumbered file is
    what ran after the last marker: the interpreter's exit)."""
    numbered = []
    for path in folder.glob(f"{stem}.*"):
        suffix = path.name[len(stem) + 1:]
        if suffix.isdigit():
            match = _SUMMARY.search(path.read_text(errors="replace"))
            if match is None:
                raise InstructionCountError(f"{path.name}: no instruction total in the callgrind dump")
            numbered.append((int(suffix), int(match.group(1))))
    return [total for _, total in sorted(numbered)]


# --- steps -----------------------------------------------------------------------------------------------------


def busy(n: int) -> None:
    """``n`` turns of an empty Python loop: work whose instructions grow with ``n`` and nothing else."""
    for _ in range(n):
        pass


def python_loop(n: int = 10_000) -> Callable[[], None]:
    """A step of :func:`busy` ``n``: the smallest CPU code path, for the counter's own tests and calibration."""
    return lambda: busy(n)


def _load(factory: str) -> Callable[..., Callable[[], None]]:
    module, _, attr = factory.rpartition(":")
    if not module or not attr:
        raise ValueError(f"factory {factory!r}: give 'module:attr' or 'path/to/file.py:attr'")
    if module.endswith(".py"):
        import importlib.util

        spec = importlib.util.spec_from_file_location(Path(module).stem, module)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        import importlib

        mod = importlib.import_module(module)
    return getattr(mod, attr)


def _worker(argv: list[str]) -> None:
    """Build the step, warm it up, and run the rounds between the markers callgrind dumps at."""
    import gc

    factory, kwargs, warmup, steps, rounds = argv[0], json.loads(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    step = _load(factory)(**kwargs)
    for _ in range(warmup):
        step()
    gc.collect()
    for _ in range(rounds):
        os.getpgrp()
        for _ in range(steps):
            step()
    os.getpgrp()


if __name__ == "__main__":
    _worker(sys.argv[1:])
