import subprocess
import sys

PURE = ["config", "counts", "roofline", "balance", "allocation", "capacity", "level1", "kernels", "vendor", "fit",
        "ceilings", "model", "overhead", "readers", "readers.cerebras", "readers.sambanova",
        "readers.graphcore", "results"]


def test_importing_dabench_does_not_import_torch():
    code = (
        "import sys\n"
        + "".join(f"import pytest_genai.dabench.{m}\n" for m in PURE)
        + "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
