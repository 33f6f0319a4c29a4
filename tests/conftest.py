"""Test-suite configuration.

pytester's in-process runs snapshot and restore ``sys.modules``; torch cannot be imported twice in one process, so
it is imported once here, before any pytester run, when it is installed.
"""
try:
    import torch  # noqa: F401
except ImportError:  # the plugin itself works without torch
    pass
