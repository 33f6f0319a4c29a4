"""The A1 quality rows run in their CASES order within each (model, device): each quantized model is built once.

Both spellings of the test command collect this file: ``python3 -m pytest`` puts the working folder on ``sys.path``,
the bare ``pytest`` (with ``--import-mode=importlib``) does not, so ``benchmarks`` is not importable by name there and
the benchmark file is loaded from its path instead.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_module(name: str):
    """``benchmarks/<name>.py`` loaded from its path (a private module name, so pytest's own import is not shadowed)."""
    spec = importlib.util.spec_from_file_location(f"_order_check_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


CASES = _benchmark_module("test_quantization").CASES  # the order the rows must follow


def _bare_pytest(tmp_path: Path) -> list[str]:
    """The bare ``pytest`` spelling: the console script beside this interpreter, else the same entry point run from a
    script outside the checkout (so ``sys.path[0]`` is not the working folder, as for the console script)."""
    script = Path(sys.executable).with_name("pytest")
    if script.is_file():
        return [str(script)]
    entry = tmp_path / "pytest_entry.py"
    entry.write_text("import sys\nimport pytest\nsys.exit(pytest.console_main())\n", encoding="utf-8")
    return [sys.executable, str(entry)]


def test_the_bare_pytest_spelling_collects_this_file(tmp_path):
    """DECISIONS, both spellings (``python3 -m pytest`` collects this file in the next test's own run). This file
    alone: with a ``benchmarks/`` file among the arguments the bare spelling resolved ``benchmarks`` too (pytest 9.0
    had imported it for ``benchmarks/conftest.py``), hiding the failure."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([*_bare_pytest(tmp_path), "tests/test_benchmark_order.py", "--collect-only", "-q",
                          "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "tests/test_benchmark_order.py::test_quantized_rows_of_one_model_run_together" in out.stdout


def test_quantized_rows_of_one_model_run_together():
    """Also the ``python3 -m pytest`` spelling's collection of this file (deselected by ``-m cpu``, but imported:
    an import error would make the exit code 2)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_benchmark_order.py", "benchmarks/test_quantization.py",
         "benchmarks/test_eval_vs_lmeval.py", "-m", "cpu", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = [line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines()
            if line.startswith("benchmarks/test_quantization.py::test_quantized_model_quality[")]
    assert rows, out.stdout[-2000:]
    seen: dict[str, list[int]] = {}
    for row in rows:
        case = next(c for c in sorted(CASES, key=lambda c: -len(c.id)) if row.endswith("-" + c.id))
        seen.setdefault(row[: -len(case.id)], []).append(CASES.index(case))
    for group, order in seen.items():
        assert order == sorted(order) == list(range(len(CASES))), f"{group}: rows ran in case order {order}"
    groups = [next(g for g in seen if row.startswith(g)) for row in rows]
    assert groups == sorted(groups, key=groups.index), f"the rows of one model are interleaved: {groups}"
