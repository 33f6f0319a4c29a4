"""Repository-level pytest configuration: the suite's own tests use pytester for plugin behaviour."""
pytest_plugins = ["pytester"]
