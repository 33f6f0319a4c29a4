"""``python -m pytest_genai.cli``: the ``pytest-genai`` command."""
import sys

from pytest_genai.cli import main

sys.exit(main())
