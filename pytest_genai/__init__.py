"""pytest-genai: published generative-AI performance research as runnable, asserting pytest benchmarks.

Importing this package (or its pytest plugin) imports no torch; heavy libraries load inside the functions that use them.
"""
__version__ = "0.1.0"
SCHEMA = "pytest-genai/1"
