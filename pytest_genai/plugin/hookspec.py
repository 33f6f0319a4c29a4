"""pytest-genai's own hooks, for conftest files and other plugins."""


def pytest_genai_probes(config, probes):
    """Add, replace or remove device probes before detection: ``probes`` maps a kind to a callable returning a
    :class:`pytest_genai.devices.ProbeResult`; change it in place."""
