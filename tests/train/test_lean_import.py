"""Importing the train package's light modules must not import torch, transformers or deepspeed."""
import subprocess
import sys


def test_light_modules_do_not_import_heavy_libraries():
    code = (
        "import sys\n"
        "import pytest_genai.train, pytest_genai.train.archs, pytest_genai.train.planner, pytest_genai.train.config\n"
        "import pytest_genai.train.metrics, pytest_genai.train.cli\n"
        "import pytest_genai.train.run, pytest_genai.train.strategies, pytest_genai.train.gaudi\n"
        "import pytest_genai.train.flops, pytest_genai.train.build, pytest_genai.train.bare_ddp\n"
        "import pytest_genai.train.results\n"
        "heavy = [m for m in ('torch', 'transformers', 'deepspeed') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"heavy modules imported: {out}"
