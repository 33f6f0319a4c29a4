"""Reading published numbers never needs torch: every reference module imports without it."""
import os
import subprocess
import sys
from pathlib import Path

MODULES = ["row", "optimum_habana", "nemo", "sources", "runs", "generations", "claims", "annotate"]


def test_importing_the_reference_package_does_not_import_torch() -> None:
    code = ("import sys\n" + "".join(f"import pytest_genai.reference.{m}\n" for m in MODULES)
            + "import pytest_genai.cli.reference\n"
            + "from pytest_genai.reference import sources\nsources.load_all()\n"
            + "assert 'torch' not in sys.modules, 'torch imported'\n")
    root = str(Path(__file__).resolve().parents[2])  # this checkout, not an installed copy
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
