"""Importing the compositions must not import torch or transformers (benchmarks and user test files import them)."""
import subprocess
import sys


def test_importing_the_compositions_does_not_import_torch():
    code = ("import sys, pytest_genai.compose, pytest_genai.compose.quantized_eval, "
            "pytest_genai.compose.quant_properties, pytest_genai.compose.quality_result\n"
            "print(','.join(m for m in ('torch', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
