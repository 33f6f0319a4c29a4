import subprocess
import sys

MODULES = ["pytest_genai.dabench.level2"] + [
    f"pytest_genai.dabench.level2.{m}" for m in ("partition", "knee", "metrics", "config", "run", "deploy", "pipeline",
                                                 "tensor_parallel", "strategies", "checks", "worker", "comm")]


def test_importing_the_package_does_not_import_torch():
    code = "import sys\n" + "".join(f"import {m}\n" for m in MODULES) + "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
