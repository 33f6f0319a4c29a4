"""The plugin's hook specifications under the name conftest files and plugins have imported them by; they live in
:mod:`pytest_genai.plugin.hookspec`, with the rest of the pytest face."""
from pytest_genai.plugin.hookspec import pytest_genai_probes  # noqa: F401
