"""Compiled kernels: built once into the cache, or None with the reason (callers then use their torch path)."""
import os
from pathlib import Path

import pytest

from pytest_genai.runtime import native

KERNEL = Path(native.__file__).parents[1] / "quant" / "csrc" / "scan.c"


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_GENAI_CACHE", str(tmp_path / "cache"))
    native.load.cache_clear()
    yield
    native.load.cache_clear()


def test_compiles_once_into_the_cache_and_loads():
    if native.compiler() is None:
        pytest.skip("no C compiler here")
    lib = native.load(KERNEL)
    assert lib is not None and hasattr(lib, "genai_scan_f32")
    built = list((Path(os.environ["PYTEST_GENAI_CACHE"]) / "native").glob("scan-*.so"))
    assert len(built) == 1 and not list(built[0].parent.glob(".*"))  # no temporary left behind
    native.load.cache_clear()
    mtime = built[0].stat().st_mtime_ns
    assert native.load(KERNEL) is not None and built[0].stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_a_cached_library_that_does_not_load_is_built_again_and_stale_temporaries_go():
    """A truncated cached .so (or one built against another C library on a shared cache) was never rebuilt: the
    kernel was off for good, and why_not said "compiling failed". A killed build's temporary file stayed forever.
    (Each load in a fresh process: dlopen would hand this one the library it already has by that name.)"""
    import subprocess
    import sys

    if native.compiler() is None:
        pytest.skip("no C compiler here")
    code = ("import sys; from pathlib import Path; from pytest_genai.runtime import native; "
            f"lib = native.load(Path({str(KERNEL)!r})); print(lib is not None and hasattr(lib, 'genai_scan_f32'), "
            "native.why_not(Path(sys.argv[1])))")

    def load_fresh() -> str:
        done = subprocess.run([sys.executable, "-c", code, str(KERNEL)], capture_output=True, text=True, timeout=120,
                              env=os.environ.copy())
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert load_fresh().startswith("True")
    (built,) = (Path(os.environ["PYTEST_GENAI_CACHE"]) / "native").glob("scan-*.so")
    built.write_bytes(b"not an ELF file")
    stale = built.parent / f".{built.stem}-killed.so"
    stale.write_bytes(b"half")
    os.utime(stale, (1, 1))  # left by a build killed long ago
    assert load_fresh().startswith("True")
    assert built.read_bytes()[:4] == b"\x7fELF" and not stale.exists() and not list(built.parent.glob(".*"))


def test_disabled_by_the_environment(monkeypatch):
    monkeypatch.setenv(native.DISABLE_ENV, "0")
    assert native.load(KERNEL) is None
    assert native.why_not(KERNEL) == f"{native.DISABLE_ENV}=0"


def test_a_failing_compiler_means_none_with_its_message(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "false")  # on PATH, exits 1
    monkeypatch.setattr(native.sysconfig, "get_config_var", lambda name: "")
    assert native.load(KERNEL) is None
    assert "compiling or loading scan.c failed" in native.why_not(KERNEL)
    assert not list((tmp_path / "cache" / "native").glob("*"))  # the failed output is not kept


def test_no_compiler_on_path(monkeypatch):
    monkeypatch.setenv("CC", "")
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(native.sysconfig, "get_config_var", lambda name: "")
    assert native.load(KERNEL) is None and "no C compiler" in native.why_not(KERNEL)


def test_an_openmp_kernel_runs_on_torchs_openmp_runtime_and_builds_without_it_where_it_cannot():
    if native.compiler() is None:
        pytest.skip("no C compiler here")
    import ctypes

    import torch

    torch.ones(1 << 16).abs()  # torch's OpenMP runtime is loaded (it is whenever a kernel gets torch tensors)
    lib = native.load(KERNEL, openmp=True)
    assert lib is not None
    lib.genai_scan_openmp.restype = ctypes.c_int
    gomp = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if "libgomp" in line}
    if lib.genai_scan_openmp():  # one OpenMP runtime in the process: torch's (the loaded soname is reused)
        assert len(gomp) <= 1, gomp
    native.load.cache_clear()
    original = native.OPENMP_FLAGS
    native.OPENMP_FLAGS = ("-fno-such-flag-here",)  # a compiler without OpenMP: built as without, not None
    try:
        plain = native.load(KERNEL, openmp=True)
    finally:
        native.OPENMP_FLAGS = original
    assert plain is not None and native.why_not(KERNEL) == ""
    plain.genai_scan_openmp.restype = ctypes.c_int
    assert plain.genai_scan_openmp() == 0


def test_vector_extensions_read_cpuinfo_flags_in_a_fixed_order():
    """What the bandwidth benchmark records beside the scan's path: x86 ``flags`` and Arm ``Features`` lines."""
    epyc = "processor\t: 0\nflags\t\t: fpu sse4_2 avx2 avx fma bmi2\nprocessor\t: 1\nflags\t\t: fpu sse4_2 avx2 avx fma\n"
    assert native.vector_extensions(epyc) == ["sse4_2", "avx", "avx2", "fma"]
    xeon = "flags\t\t: avx avx2 avx512f avx512bw avx512vl avx512_vnni amx_tile fma sse4_2\n"
    assert native.vector_extensions(xeon) == ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                              "avx512_vnni", "amx_tile"]
    assert native.vector_extensions("Features\t: fp asimd sve sve2\n") == ["asimd", "sve", "sve2"]
    assert native.vector_extensions("model name\t: unknown\n") == []
