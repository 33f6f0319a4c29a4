import subprocess
import sys


def test_importing_the_quant_package_and_its_data_modules_does_not_import_torch():
    code = ("import sys, pytest_genai.quant as q, pytest_genai.quant.config, pytest_genai.quant.plan, "
            "pytest_genai.quant.formats, pytest_genai.quant.metrics, pytest_genai.quant.results; q.PlanConfig(); "
            "q.default_tiers('cpu'); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
