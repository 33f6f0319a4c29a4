"""The package's layering, read from the source (no import runs): an experiment package imports the core, the
runtime and itself, never another experiment; the core and the runtime import no experiment; only
``pytest_genai.compose`` joins two experiments.

Every module's AST is walked, so function-level (lazy) imports count as much as module-level ones, and so do
module names given as strings: ``importlib.import_module("...")``, lazy ``"module:attr"`` registries and
``python -m`` worker names.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_genai"
EXPERIMENTS = frozenset({"quant", "evals", "train", "diffusion", "dabench"})
#: may import two experiments (and nothing may import it but benchmarks and tests)
COMPOSE = "compose"
_SUBCOMMAND = "the `pytest-genai` command's subcommand table: wiring, each imported only when its subcommand runs"
#: (importing module, imported module prefix) pairs allowed across the rules above, each with its reason.
ALLOWED: dict[tuple[str, str], str] = {
    ("pytest_genai.cli", "pytest_genai.train.cli"): _SUBCOMMAND,
    ("pytest_genai.cli", "pytest_genai.evals.fetch"): _SUBCOMMAND,
    ("pytest_genai.cli", "pytest_genai.evals.cache_cli"): _SUBCOMMAND,
}

_MODULE_STRING = re.compile(r"pytest_genai(\.\w+)+(:\w+)?")


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool = False, strings: bool = True) -> set[str]:
    """Every ``pytest_genai`` module ``source`` names: imports anywhere in the file (relative ones resolved
    against ``module``), ``importlib.import_module`` literals, and (``strings``) string constants that are module
    names."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)  # `from pkg import submodule`
        elif (strings and isinstance(node, ast.Constant) and isinstance(node.value, str)
              and _MODULE_STRING.fullmatch(node.value)):
            found.add(node.value.partition(":")[0])
    return {m for m in found if m == "pytest_genai" or m.startswith("pytest_genai.")}


def family(module: str) -> str:
    """``pytest_genai.<family>...``: the experiment, ``compose``, or the core / runtime name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations(modules: dict[str, tuple[str, bool]]) -> list[str]:
    """``module imports module (why not)`` for every import that breaks the layering. ``modules`` maps a module
    name to (its source, whether it is a package ``__init__``)."""
    out = []
    for name, (source, is_package) in sorted(modules.items()):
        mine = family(name)
        for target in sorted(imported_modules(source, name, is_package)):
            theirs = family(target)
            if theirs == mine or any(name == m and target.startswith(p) for m, p in ALLOWED):
                continue
            if theirs == COMPOSE:
                out.append(f"{name} imports {target} (only benchmarks and tests use compositions)")
            elif theirs in EXPERIMENTS and mine in EXPERIMENTS:
                out.append(f"{name} imports {target} (an experiment imports no other experiment: move shared "
                           "machinery to pytest_genai.runtime or the composition to pytest_genai.compose)")
            elif theirs in EXPERIMENTS and mine != COMPOSE:
                out.append(f"{name} imports {target} (the core and the runtime import no experiment)")
    return out


def _package_modules() -> dict[str, tuple[str, bool]]:
    return {module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_the_package_is_layered():
    modules = _package_modules()
    assert len(modules) > 100 and "pytest_genai.runtime.launcher" in modules  # the walk found the package
    found = violations(modules)
    assert not found, "\n".join(found)


def test_every_experiment_package_exists():
    for name in EXPERIMENTS | {COMPOSE, "runtime"}:
        assert (PACKAGE / name / "__init__.py").is_file(), name


@pytest.mark.parametrize("module, source, bad", [
    ("pytest_genai.diffusion.ddp", "def f():\n    from pytest_genai.train.launcher import launch\n", True),
    ("pytest_genai.quant.x", "def f():\n    from pytest_genai.evals import models\n", True),
    ("pytest_genai.dabench.level2.run", "from ...train import rank\n", True),  # relative, three levels up
    ("pytest_genai.runtime.timing", "import pytest_genai.dabench.model\n", True),
    ("pytest_genai.plugin", "import importlib\nimportlib.import_module('pytest_genai.evals.models')\n", True),
    ("pytest_genai.train.x", "WORKER = ('-m', 'pytest_genai.diffusion.worker')\n", True),
    ("pytest_genai.quant.x", "from pytest_genai.compose import quantized_eval\n", True),
    ("pytest_genai.dabench.level2.run", "from pytest_genai.dabench.model import build_stack\n", False),
    ("pytest_genai.dabench.level2.run", "from .. import model\nfrom . import knee\n", False),
    ("pytest_genai.train.x", "from pytest_genai.runtime.launcher import launch\nfrom pytest_genai import results\n",
     False),
    ("pytest_genai.compose.x", "from pytest_genai.quant import plan\nfrom pytest_genai.evals import models\n", False),
    ("pytest_genai.quant.x", '"""See pytest_genai.evals.models for the loader."""\n', False),  # prose, not a name
])
def test_the_walk_sees_every_kind_of_import(module, source, bad):
    assert bool(violations({module: (source, False)})) is bad


def import_graph(modules: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in the file, lazy imports too). Edges into a package's
    ``__init__`` are left out: an ``__init__`` is the package's re-export face, and ``from pkg import module`` names
    the module itself. So are module names in strings: a ``python -m`` worker runs in another process."""
    packages = {name for name, (_, is_package) in modules.items() if is_package}
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in modules.items():
        targets = {t for t in imported_modules(source, name, is_package, strings=False)
                   if t in modules and t not in packages}
        graph[name] = targets - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_loop_among_the_packages_modules():
    """Two modules that import each other (even lazily) share machinery that belongs in a third both import."""
    cycles = import_cycles(import_graph(_package_modules()))
    assert not cycles, "import loops: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_loop_finder_finds_a_lazy_loop():
    modules = {"pytest_genai.a": ("def f():\n    from pytest_genai import b\n", False),
               "pytest_genai.b": ("from pytest_genai.a import f\n", False),
               "pytest_genai.c": ("import pytest_genai.a\n", False)}
    assert import_cycles(import_graph(modules)) == [["pytest_genai.a", "pytest_genai.b"]]


def test_no_experiment_renders_through_the_report_layer():
    """Experiments and the core render tables with ``pytest_genai.tables`` (below both); ``report`` is the top floor."""
    found = [f"{name} imports {target}" for name, (source, is_package) in sorted(_package_modules().items())
             if family(name) in EXPERIMENTS | {"runtime", "devices", "claims"}
             for target in sorted(imported_modules(source, name, is_package)) if family(target) == "report"]
    assert not found, "\n".join(found)


#: the pytest face: one package, which nothing below it imports (compose's fixtures read the session's settings;
#: the hookspec alias keeps the name conftest files import)
FACE = "plugin"
FACE_USERS = frozenset({COMPOSE, "hookspec"})


def test_the_pytest_face_is_one_package_above_everything_else():
    """Hooks, options, session state, recorder, outputs and the session's reports live in ``pytest_genai.plugin``;
    the face imports no experiment, and no module outside it (but compose) imports it."""
    modules = _package_modules()
    face = sorted(m for m in modules if family(m) == FACE)
    assert {f"pytest_genai.plugin.{m}" for m in ("options", "session", "recorder", "outputs", "summary",
                                                  "session_report", "baseline", "store_run", "hookspec")} <= set(face)
    loose = sorted(m for m in modules if m.count(".") == 1 and m.rpartition(".")[2] in
                   ("options", "session", "outputs", "session_report", "report_summary"))
    assert not loose, f"face modules outside pytest_genai.plugin: {loose}"
    up = [f"{name} imports {target}" for name, (source, is_package) in sorted(modules.items())
          if family(name) in EXPERIMENTS for target in imported_modules(source, name, is_package)
          if family(target) == FACE]
    up += [f"{name} imports {target}" for name, (source, is_package) in sorted(modules.items())
           if family(name) not in FACE_USERS | {FACE}
           for target in imported_modules(source, name, is_package) if family(target) == FACE]
    down = [f"{name} imports {target}" for name in face
            for target in imported_modules(modules[name][0], name, modules[name][1])
            if family(target) in EXPERIMENTS]
    assert not up and not down, "\n".join(up + down)


def test_the_public_names_users_import_still_work(pytester: pytest.Pytester) -> None:
    """``-p pytest_genai.plugin``, the ``genai`` fixture and the hookspec, under the names conftest files use."""
    import pytest_genai.hookspec
    import pytest_genai.plugin
    from pytest_genai.plugin import hookspec

    assert pytest_genai.hookspec.pytest_genai_probes is hookspec.pytest_genai_probes
    assert callable(pytest_genai.plugin.genai) and callable(pytest_genai.plugin.pytest_addoption)
    pytester.makeconftest("""
from pytest_genai.devices import Device, ProbeResult, get_spec

def pytest_genai_probes(config, probes):
    probes["hpu"] = lambda: ProbeResult("hpu", (Device("hpu", 0, "Fake Gaudi2", "gaudi2", get_spec("gaudi2")),))
""")
    pytester.makepyfile("""
def test_a(genai, hpu):
    assert hpu.generation == "gaudi2" and genai is not None
""")
    result = pytester.runpytest_subprocess("-p", "no:genai", "-p", "pytest_genai.plugin")
    result.assert_outcomes(passed=1)


#: The floors, ground first. A module imports its own package, or packages on lower floors; two packages on one
#: floor above the ground never import each other (``report`` and ``store`` meet only in ``cli`` and ``plugin``, above both).
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"", "stats", "_toml", "atomic", "tables", "identity", "experiments", "progress", "model_folder",
               "stack"}),
    frozenset({"results"}),  # Measurement -> Record -> Run: the only readers and writers of extra_info.genai
    frozenset({"runtime"}),
    frozenset({"devices"}),
    frozenset({"claims"}),
    frozenset({"report", "store"} | EXPERIMENTS),
    frozenset({"reference"}),
    frozenset({"cli", COMPOSE}),
    frozenset({FACE, "hookspec"}),
)
#: (importing family, imported family) pairs allowed against the floors, each with its reason.
FLOOR_EXCEPTIONS: dict[tuple[str, str], str] = {
    (COMPOSE, FACE): "compose's fixtures read the session's settings",
    ("hookspec", FACE): "the hookspec alias keeps the name conftest files import",
}


def floor_of(fam: str) -> int:
    for i, members in enumerate(FLOORS):
        if fam in members:
            return i
    raise KeyError(f"package {fam!r} is on no floor: add it to FLOORS in tests/test_architecture.py")


def floor_violations(modules: dict[str, tuple[str, bool]]) -> list[str]:
    out = []
    for name, (source, is_package) in sorted(modules.items()):
        mine = family(name)
        for target in sorted(imported_modules(source, name, is_package)):
            theirs = family(target)
            if not ((PACKAGE / theirs).is_dir() or (PACKAGE / f"{theirs}.py").is_file()):
                theirs = ""  # a name in the root package (`from pytest_genai import SCHEMA`) or a string id
            if theirs == mine or (mine, theirs) in FLOOR_EXCEPTIONS or (mine in EXPERIMENTS and theirs in EXPERIMENTS):
                continue  # experiments among themselves: test_the_package_is_layered's rule
            if floor_of(theirs) > floor_of(mine):
                out.append(f"{name} imports {target} (floor {floor_of(theirs)} above its own {floor_of(mine)})")
            elif floor_of(theirs) == floor_of(mine) > 0:  # the ground's single modules: the loop test covers them
                out.append(f"{name} imports {target} (two packages on floor {floor_of(mine)})")
    return out


def test_every_package_sits_on_a_floor_and_imports_only_down():
    """Lazy imports count: a function-level import from a lower floor to a higher one is the loop of tomorrow."""
    found = floor_violations(_package_modules())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module, source, bad", [
    ("pytest_genai.store.read", "def f():\n    from pytest_genai.report.cli import emit\n", True),  # same floor
    ("pytest_genai.report.compare", "def f():\n    from pytest_genai.store import read\n", True),
    ("pytest_genai.results.runs", "def f():\n    from pytest_genai.claims import load_metrics\n", True),  # up
    ("pytest_genai.runtime.energy", "from pytest_genai.results.measurement import Measurement\n", False),
    ("pytest_genai.cli.history", "from pytest_genai.store.read import series\nfrom pytest_genai.report import plots\n",
     False),
])
def test_the_floor_rule_sees_lazy_imports(module, source, bad):
    assert bool(floor_violations({module: (source, False)})) is bad
