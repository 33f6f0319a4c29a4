import subprocess
import sys


def test_importing_the_evals_package_does_not_import_torch_or_transformers():
    code = (
        "import sys\n"
        "import pytest_genai.evals\n"
        "from pytest_genai.evals import config, data, lm, lmeval_compare, metrics, models, runner, scoring, session, tasks, text, throughput, windows\n"
        "heavy = [m for m in ('torch', 'transformers', 'datasets', 'lm_eval') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
