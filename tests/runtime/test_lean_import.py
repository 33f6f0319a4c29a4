"""Importing the runtime's modules must not import torch (workers and the plugin import them before any run)."""
import subprocess
import sys

MODULES = ["launcher", "watchdog", "rank", "procgroup", "timing", "memtrack", "threads"]


def test_runtime_modules_do_not_import_torch():
    code = (
        "import sys\nimport pytest_genai.runtime\n"
        + "".join(f"import pytest_genai.runtime.{m}\n" for m in MODULES)
        + "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\nprint(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"heavy modules imported: {out}"
