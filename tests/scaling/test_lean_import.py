import subprocess
import sys

MODULES = ["pytest_genai.scaling", "pytest_genai.scaling.partition", "pytest_genai.scaling.knee",
           "pytest_genai.scaling.metrics", "pytest_genai.scaling.config", "pytest_genai.scaling.run",
           "pytest_genai.scaling.deploy", "pytest_genai.scaling.pipeline", "pytest_genai.scaling.tensor_parallel",
           "pytest_genai.scaling.strategies", "pytest_genai.scaling.checks", "pytest_genai.scaling.worker",
           "pytest_genai.scaling.comm"]


def test_importing_the_package_does_not_import_torch():
    code = "import sys\n" + "".join(f"import {m}\n" for m in MODULES) + "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
