"""The Gaudi-stack leg's tests run only where scripts/gaudi_leg.sh runs them: its virtual environment (optimum-habana
1.21 and what it pins) with the stand-in bridge of tests/gaudi_standin on PYTHONPATH. Anywhere else they skip."""
import importlib.util

import pytest


def _leg_problem() -> str | None:
    for module in ("habana_frameworks", "optimum.habana"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not importable"
        except (ImportError, ValueError):
            return f"{module} is not importable"
    import habana_frameworks

    if not getattr(habana_frameworks, "STANDIN", False):
        return "habana_frameworks is the real bridge: these tests drive the CPU stand-in"
    return None


def pytest_collection_modifyitems(config, items):
    problem = _leg_problem()
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"Gaudi-stack leg only (scripts/gaudi_leg.sh): {problem}")
    for item in items:
        if "gaudi_leg" in item.path.parts:
            item.add_marker(skip)
