"""Small C kernels: compiled on first use with the machine's C compiler, cached, and loaded with ctypes.

A kernel is one ``.c`` file shipped with the package. ``load(path)`` compiles it once per (source, flags, compiler,
CPU) into ``<cache>/native/`` (written to a temporary file, then renamed into place, so concurrent sessions never
load a partial library) and returns the ``ctypes.CDLL``, or None when it cannot: no compiler, a failed compile,
``PYTEST_GENAI_NATIVE=0``. Callers keep a torch path for None and record which path ran (``why_not(path)`` says
why the kernel is not used). ctypes releases the GIL during a call, so callers may run kernels on threads.

``-march=native`` builds for this CPU: the key includes the CPU's model and flags, so a cache shared by different
nodes holds one library per CPU type.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_genai import progress

_LOG = progress.logger(__name__)

FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-fassociative-math", "-fno-signed-zeros", "-fno-trapping-math",
         "-shared", "-fPIC")
"""Vectorized reductions need reassociation (``-fassociative-math`` and what it requires); ``-ffast-math`` is not
used, so NaN and inf keep IEEE comparisons."""
DISABLE_ENV = "PYTEST_GENAI_NATIVE"
COMPILE_TIMEOUT_S = 120
_WHY_NOT: dict[str, str] = {}


def compiler() -> str | None:
    """``$CC``, else the compiler Python was built with, else ``cc``; None when none is on PATH."""
    for candidate in (os.environ.get("CC"), (sysconfig.get_config_var("CC") or "").split(" ")[0], "cc"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def _cpu_key() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        import platform

        return platform.machine() + platform.processor()
    keep = [ln for ln in text.splitlines() if ln.split(":")[0].strip() in ("model name", "flags", "Features")]
    return "\n".join(sorted(set(keep)))


#: The vector extensions worth naming in a result (x86 and Arm ``/proc/cpuinfo`` flag names), in the order listed.
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                "amx_tile", "asimd", "sve", "sve2")


def vector_extensions(cpuinfo: str | None = None) -> list[str]:
    """The CPU's vector extensions among :data:`VECTOR_FLAGS`, from ``/proc/cpuinfo`` (``cpuinfo``: its text) or
    empty where it cannot be read: what ``-march=native`` builds the kernels for."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return []
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.split(":")[0].strip() in ("flags", "Features"):
            flags.update(line.split(":", 1)[1].split())
    return [name for name in VECTOR_FLAGS if name in flags]


#: Added for a kernel loaded with ``openmp=True``. Its ``#pragma omp`` loops then run on the process's OpenMP runtime:
#: loaded after torch, the library's ``libgomp.so.1`` is torch's own (the loader reuses a loaded soname), so the
#: loops run on torch's intra-op threads instead of competing with them (they spin for milliseconds after each torch
#: op, which slows a thread pool of our own).
OPENMP_FLAGS = ("-fopenmp",)


def library_path(source: Path, cc: str, flags: tuple[str, ...] = FLAGS) -> Path:
    """Where the compiled ``source`` lives in the cache (keyed by source, flags, compiler and CPU)."""
    from pytest_genai.runtime.cachedir import cache_root

    key = hashlib.sha256(b"\0".join([source.read_bytes(), " ".join(flags).encode(), cc.encode(),
                                     _cpu_key().encode()])).hexdigest()[:16]
    return cache_root() / "native" / f"{source.stem}-{key}.so"


def cached_libraries(root: Path | None = None) -> list[Path]:
    """The compiled kernels in the cache (``<cache>/native/<kernel>-<key>.so``), not a compile in progress (its
    temporary file starts with a dot)."""
    from pytest_genai.runtime.cachedir import cache_root

    folder = (root or cache_root()) / "native"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.so") if not p.name.startswith(".") and p.is_file())


def clear_libraries(root: Path | None = None) -> list[tuple[Path, int]]:
    """Remove every compiled kernel of the cache; (path, bytes) of each removed. A session that already loaded one
    keeps its mapping (POSIX unlink); the next session compiles again."""
    removed = []
    for path in cached_libraries(root):
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:  # another clear got there first
            continue
        removed.append((path, size))
    return removed


def why_not(source: Path) -> str:
    """Why ``load(source)`` returned None ("" when it did not, or was not called)."""
    return _WHY_NOT.get(str(source), "")


@functools.lru_cache(maxsize=None)
def load(source: Path, openmp: bool = False) -> ctypes.CDLL | None:
    """The compiled kernel library of ``source``, or None (see :func:`why_not`). ``openmp``: built with
    :data:`OPENMP_FLAGS` where the compiler takes them, else as without (the kernel must work both ways)."""
    source = Path(source)
    if os.environ.get(DISABLE_ENV, "1").strip().lower() in ("0", "no", "false", "off"):
        _WHY_NOT[str(source)] = f"{DISABLE_ENV}=0"
        return None
    cc = compiler()
    if cc is None:
        _WHY_NOT[str(source)] = "no C compiler on PATH (set CC)"
        return None
    if openmp:
        lib = _build(source, cc, FLAGS + OPENMP_FLAGS)
        if lib is not None:
            return lib
        _LOG.info("native kernel %s: built without OpenMP (%s)", source.name, _WHY_NOT.pop(str(source), ""))
    return _build(source, cc, FLAGS)


def _build(source: Path, cc: str, flags: tuple[str, ...]) -> ctypes.CDLL | None:
    try:
        path = library_path(source, cc, flags)
        built = False
        if not path.exists():
            _compile(source, cc, flags, path)
            built = True
        try:
            return ctypes.CDLL(str(path))
        except OSError as exc:
            if built:
                raise
            # a cached library that does not load (truncated, or built against another C library on a shared
            # cache): build it again once instead of running without the kernel from now on
            _LOG.info("native kernel %s: cached %s does not load (%s); building it again", source.name, path.name, exc)
            path.unlink(missing_ok=True)
            _compile(source, cc, flags, path)
            return ctypes.CDLL(str(path))
    except (OSError, subprocess.SubprocessError) as exc:
        _WHY_NOT[str(source)] = f"compiling or loading {source.name} failed: {exc}"
        _LOG.info("native kernel %s not used: %s", source.name, exc)
        return None


def _compile(source: Path, cc: str, flags: tuple[str, ...], path: Path) -> None:
    """Compile ``source`` into ``path`` through a temporary file in its folder, renamed into place when complete
    (concurrent builds are safe); temporary files that a killed build left (older than the compile timeout) go."""
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for stale in path.parent.glob(f".{path.stem}-*.so"):
        try:
            if now - stale.stat().st_mtime > 2 * COMPILE_TIMEOUT_S:
                stale.unlink()
        except OSError:
            pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".so", dir=path.parent)
    os.close(fd)
    try:
        with progress.phase(f"compiling {source.name} with {Path(cc).name}", log=_LOG, hint="once per CPU type"):
            proc = subprocess.run([cc, *flags, "-o", tmp, str(source)], capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S)
        if proc.returncode != 0:
            raise OSError(f"{Path(cc).name} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def bind(source: Path, signatures: dict[str, tuple[Any, tuple[Any, ...]]], openmp: bool = False) -> ctypes.CDLL | None:
    """:func:`load` with each named function's C signature, ``{name: (restype, argtypes)}``, set; None as load."""
    lib = load(source, openmp)
    if lib is not None:
        # once per library and name: callers bind on every use (the sensitivity pass ten times per analysis)
        bound = lib.__dict__.setdefault("_genai_bound", set())
        for name, (restype, argtypes) in signatures.items():
            if name not in bound:
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, list(argtypes)
                bound.add(name)
    return lib
