"""The pytest plugin's hooks, options, markers and fixtures; the work lives in the package's other modules."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import warnings
from typing import Any

import pytest

from pytest_genai import SCHEMA, experiments
from pytest_genai.devices.device import ENABLE_HINTS, KINDS, Device
from pytest_genai.devices.probes import DeviceBroken
from pytest_genai.plugin.options import SETTINGS, SettingError, given, resolve, resolve_all, source_of
from pytest_genai.plugin.session import SessionState

STATE = pytest.StashKey[SessionState]()  # present only once the plugin is active in this session
OPTED_IN = pytest.StashKey[bool]()
ACTIVATION_ERROR = pytest.StashKey[pytest.UsageError]()
REQUIRE_CHECKED = pytest.StashKey[bool]()
BENCHMARK_JSON = pytest.StashKey["str | None"]()  # absolute --benchmark-json path, "-" for stdout
_ALONE = "-m 'cpu and not selfcheck and not extension' runs the papers' experiments alone"
#: The experiments' markers, then self-checks against other tools and rows beyond the papers' plans (the README's
#: main job leaves both out).
MARKERS = {
    **experiments.markers(),
    "selfcheck": "checks the suite itself against other tools and bare code paths (lm-eval, torchao, INC, a bare "
                 f"torchrun script, a bare timing loop, the memory bandwidth); not a paper experiment: {_ALONE}",
    "extension": "a row beyond the papers' plans (Paper A's weight-only FP8, FP8-compute and prune-then-quantize "
                 f"rows): {_ALONE}",
    "claims(*ids, kinds=())": "the claim ids this benchmark checks and the device kinds it checks them on "
                              "(genai.check refuses undeclared ids; pytest-genai claims --coverage lists them)"}
_HELP = {
    "devices": "device kinds to run genai_device-parametrized tests on, comma separated (default: all kinds; absent ones skip with the reason, broken ones (the SDK imports but its probe raises) error)",
    "require": "device kinds that must be present, comma separated (e.g. hpu): an absent or broken one stops the session at start with its reason, so a CI job on a Gaudi node cannot pass having run nothing (default: none)",
    "claims": "'enforce' (default): a failed paper or physics claim fails its test (a timing claim fails only when its whole interval is past the bound, else it reads inconclusive); 'strict': inconclusive fails too; 'report': record verdicts without failing. Project targets never fail a test",
    "data_dir": "folder with offline copies of the evaluation data (layout of shared/data: wikitext-2-raw-v1/, hellaswag/, boolq/)",
    "model": "model to evaluate: a Hugging Face id (used only if cached locally) or a local folder",
    "trust_remote_code": "yes: let --genai-model run the Python code that comes with its weights (transformers' trust_remote_code; default no)",
    "limit": "evaluate a fixed, seeded subset of this many examples per task (recorded in the JSON)",
    "plots": "write plots (roofline, scaling, accuracy vs compression) into this folder at the end of the run",
    "nproc": "processes per node for distributed benchmarks (torchrun --nproc-per-node)",
    "nnodes": "nodes for distributed benchmarks (torchrun --nnodes)",
    "rdzv_endpoint": "rendezvous endpoint host:port for multi-node distributed benchmarks",
    "scale": "workload scale for every benchmark: tiny (default; CPU minutes: e.g. a 2,048-token WikiText slice and 40 HellaSwag/BoolQ examples, 4-layer fine-tune models), small (32K tokens, 1,000 examples each), or full (all data, the paper's model sizes)",
    "memory_budget": "memory budget for capacity searches on the CPU, e.g. 2GiB",
    "timeout": "seconds before a distributed worker is declared hung and killed",
    "dabench_profiles": "folder of vendor outputs for WSE/RDU/IPU: <kind>/<config id>/<profile>, <kind>/capacity/, <kind>/level2/<run>/ (docs/dabench.md); makes those kinds artifact devices where their SDK is absent",
    "baseline": "a previous --benchmark-json file, or a run in pytest-benchmark's --benchmark-storage: its number (0003) or latest (the newest); each benchmark's metrics are compared with it as the run goes",
    "reference_rows": "extra published rows to give matching benchmarks a reference verdict (files written by `pytest-genai reference list --json`, joined by the path separator; the shipped rows always count)",
    "run_noise": "with --genai-baseline: how much a run's log mean moves between launches of the same code, which this run's rounds cannot show: measured (default: the table measured on a shared 2-vCPU VM), a number for every experiment (0: rounds alone), or finetune=0.2,*=0.05",
    "max_regression": "per-metric regression thresholds for --genai-baseline, e.g. tokens_per_s=5%,perplexity=0.5%; or pytest-benchmark's field:N% for its round-time statistics (min, max, mean, median, stddev, iqr: median:10%) and for genai metrics (tokens_per_s:5%)",
    "store": "also write this run into the results store at the end of the session (after --benchmark-json): a SQLAlchemy URL (sqlite:///PATH, postgresql+psycopg://USER@HOST/DB) or a SQLite file path; see pytest-genai history/compare",
    "finetune_methods": "A2 fine-tuning methods, comma separated: full, lora (default: lora only at --genai-scale full, both at tiny and small)",
    "rounds": "auto: a timing benchmark whose interval cannot yet decide its claim (or, with --genai-baseline, its gate threshold) takes more interleaved rounds, up to --genai-time-budget, and the JSON's rounds says how many and why it stopped; fixed (default): each benchmark's own count",
    "time_budget": "with --genai-rounds auto: the most seconds each benchmark spends on rounds past its own, e.g. 60s, 2m (default 60s)",
    "report": "write this run's report (what `pytest-genai report` renders: claims, one table per experiment, the --genai-plots plots) to this file at the end of the session, also when tests failed; Markdown, or HTML for a .html path",
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_genai.plugin import hookspec

    pluginmanager.add_hookspecs(hookspec)


def _asked_on_command_line(config: pytest.Config) -> bool:
    """A ``--genai-*`` option, ``-p pytest_genai.plugin`` or a path to this suite's benchmarks on the command line."""
    args = [str(arg) for arg in config.invocation_params.args]
    return any(arg.startswith("--genai-") or arg.replace("=", "") == "-ppytest_genai.plugin"
               or (arg == "pytest_genai.plugin" and prev == "-p") for prev, arg in zip([""] + args, args)) \
        or _names_benchmarks(args, config.invocation_params.dir)


def _opted_in(config: pytest.Config) -> bool:
    """Did the command line or ini ask for pytest-genai? (A ``GENAI_*`` variable alone must not act elsewhere.)"""
    if OPTED_IN not in config.stash:
        config.stash[OPTED_IN] = _asked_on_command_line(config) or any(
            _ini_set(config, ini) for _o, _e, ini, _p, _d in SETTINGS.values() if ini)
    return config.stash[OPTED_IN]


def _ini_set(config: pytest.Config, ini: str) -> bool:
    try:
        return bool(config.getini(ini))
    except Exception:  # a value of the wrong type: set, and activation names what is wrong with it
        return True


def _names_benchmarks(args: list[str], base: Any) -> bool:
    """A path argument that is this suite's ``benchmarks/`` folder or a registered benchmark file in it."""
    files = [name for exp in experiments.EXPERIMENTS for name in exp.benchmarks]
    for arg in (arg for arg in args if not arg.startswith("-")):
        path = os.path.normpath(os.path.join(os.fspath(base), arg.split("::")[0]))
        if os.path.basename(path) == "benchmarks" and os.path.isdir(path):
            if any(os.path.isfile(os.path.join(path, name)) for name in files):
                return True
        elif os.path.basename(os.path.dirname(path)) == "benchmarks" and \
                experiments.for_benchmark_file(os.path.basename(path)) is not None:
            return True
    return False


def _atomic_benchmark_json(config: pytest.Config | None, parser: Any) -> None:
    """Make --benchmark-json atomic (before pytest parses it) where the session asked for pytest-genai; else
    pytest-benchmark's option stays its own."""
    if config is not None and parser is not None and _asked_on_command_line(config):
        from pytest_genai.plugin.outputs import make_benchmark_json_atomic

        make_benchmark_json_atomic(parser)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    _atomic_benchmark_json(pluginmanager.get_plugin("pytestconfig"), parser)  # pytest-benchmark registered first
    group = parser.getgroup("genai", "pytest-genai: generative-AI benchmarks on accelerators")
    for name, (option, env, ini, _parser, _default) in SETTINGS.items():
        text = _HELP[name] + (f" [env {env}]" if env else "")
        # argparse %-formats option help (%(default)s...): a literal '%' (e.g. "5%") must be written '%%'
        group.addoption(option, dest=option.lstrip("-").replace("-", "_"), default=None, help=text.replace("%", "%%"))
        if ini:
            parser.addini(ini, _HELP[name], default=None)


def pytest_plugin_registered(plugin: Any, manager: pytest.PytestPluginManager) -> None:
    """pytest-benchmark registered after this plugin: make its --benchmark-json atomic now."""
    if getattr(plugin, "__name__", "") == "pytest_benchmark.plugin":
        config = manager.get_plugin("pytestconfig")
        _atomic_benchmark_json(config, getattr(config, "_parser", None))  # pytest's parser


def pytest_configure(config: pytest.Config) -> None:
    markers = {**{kind: f"runs on a {kind} device ({ENABLE_HINTS[kind]})" for kind in KINDS}, **MARKERS}
    for marker, text in markers.items():
        config.addinivalue_line("markers", f"{marker}: {text}")
    if _opted_in(config):
        _activate(config)


def _activate(config: pytest.Config) -> SessionState:
    """Validate every setting and set the session up: at configure time if it opted in, else at its first genai test."""
    if STATE in config.stash:
        return config.stash[STATE]
    if ACTIVATION_ERROR in config.stash:
        raise config.stash[ACTIVATION_ERROR]
    try:
        try:
            state = SessionState(config, claims_mode=resolve(config, "claims"),
                                 selected_kinds=resolve(config, "devices"))
            settings = resolve_all(config)  # validate every setting now, naming where a bad value came from
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None
        left_out = [kind for kind in settings["require"] if kind not in state.selected_kinds]
        if left_out:  # a required kind that --genai-devices leaves out could never run
            raise pytest.UsageError(f"{source_of(config, 'require')}: {', '.join(left_out)} required but not among "
                                    f"{source_of(config, 'devices')} ({', '.join(state.selected_kinds)}); add "
                                    f"{', '.join(left_out)} there or drop it from the requirement")
        config.stash[BENCHMARK_JSON] = _check_outputs(config, settings)
        baseline = settings["baseline"]
        if given(config, "time_budget") and settings["rounds"] != "auto":  # else silently ignored
            raise pytest.UsageError(f"{source_of(config, 'time_budget')}: the time budget applies to --genai-rounds "
                                    "auto, which is not given (each benchmark runs its own rounds); add --genai-rounds "
                                    "auto")
        if given(config, "run_noise") and not baseline:
            raise pytest.UsageError(f"{source_of(config, 'run_noise')}: the run noise applies to a comparison with "
                                    "--genai-baseline, which is not given; add --genai-baseline BASE.json")
        if settings["max_regression"] and not baseline:
            raise pytest.UsageError("--genai-max-regression: thresholds apply to a comparison with --genai-baseline, "
                                    "which is not given (nothing would be gated); add --genai-baseline BASE.json")
    except pytest.UsageError as exc:
        config.stash[ACTIVATION_ERROR] = exc
        raise
    config.stash[STATE] = state
    _sigterm_as_interrupt(config)
    if baseline:
        from pytest_genai.plugin.baseline import BaselinePlugin

        plugin = BaselinePlugin(config, baseline, settings["max_regression"], run_noise=settings["run_noise"])
        config.pluginmanager.register(plugin, "genai-baseline")
    return state


def pytest_sessionstart(session: pytest.Session) -> None:
    """--genai-require: probe the required kinds before collection; an absent or broken one stops the session."""
    config = session.config
    if STATE in config.stash:
        config.stash[REQUIRE_CHECKED] = True
        required = resolve(config, "require")
        if required and (problems := config.stash[STATE].required_problems(required)):
            raise pytest.UsageError(f"{source_of(config, 'require')}: " + "; ".join(problems))


def _check_outputs(config: pytest.Config, settings: dict[str, Any]) -> str | None:
    """The absolute --benchmark-json path. Outputs are refused now, not after every benchmark ran, when they cannot be
    written, are the run's inputs or other outputs, or would be left empty (pytest-xdist, --benchmark-disable)."""
    from pytest_genai.plugin.outputs import STDOUT, benchmark_json_path, clashing_input, output_file_problem, same_path
    from pytest_genai.store.location import sqlite_file

    saved = ["--benchmark-json"] if config.getoption("benchmark_json", None) is not None else []
    saved += [SETTINGS["store"][0]] if settings["store"] else []
    outputs = saved + [SETTINGS[name][0] for name in ("report", "plots", "baseline") if settings[name]]
    worker = hasattr(config, "workerinput")  # its controller checked
    if not worker and config.getoption("dist", "no") != "no" and outputs:
        raise pytest.UsageError(
            f"{', '.join(outputs)} with pytest-xdist (-n/--dist {config.getoption('dist')}): each worker keeps "
            "its own results and pytest-benchmark times nothing in parallel workers, so they would be written "
            "empty; run the benchmarks in one process (drop -n)")
    if not worker and config.getoption("benchmark_disable", False) and not config.getoption("benchmark_enable", False) \
            and saved:
        raise pytest.UsageError(
            f"{', '.join(saved)} with --benchmark-disable: the benchmarks run once, untimed, and none is saved, "
            "so they would be written empty; drop --benchmark-disable (--genai-report and --genai-plots work "
            "without timings)")
    path = benchmark_json_path(config.getoption("benchmark_json", None), config.invocation_params.dir)
    store = sqlite_file(settings["store"])
    if path not in (None, STDOUT):
        if problem := output_file_problem(path):
            raise pytest.UsageError(f"--benchmark-json {path}: {problem}")
        if store and same_path(path, store):
            raise pytest.UsageError(f"--benchmark-json {path}: is the --genai-store database; writing the JSON there "
                                    "would overwrite every stored run — choose another path")
    if not (report := settings["report"]):
        return path
    others = [("--benchmark-json", path), *((SETTINGS[name][0], settings[name]) for name in
                                          ("baseline", "plots", "data_dir", "dabench_profiles", "model"))]
    where = source_of(config, "report")  # GENAI_REPORT set in the environment is named as such, not as the option
    if clash := clashing_input(report, others + [("--genai-store", store)]):
        raise pytest.UsageError(f"{where} {report}: is the same path as {clash}; writing the report there would "
                                "overwrite it — choose another path")
    if problem := output_file_problem(report):
        raise pytest.UsageError(f"{where} {report}: {problem}")
    return path


#: A test that requests one of these fixtures (this plugin's, not another's of the same name) is a genai test.
GENAI_FIXTURES = ("genai", "genai_device", "genai_settings", *KINDS)


def _experiment(item: pytest.Item) -> Any:
    """The experiment of a test in a registered benchmark file (``benchmarks/<file>``), else None."""
    path = getattr(item, "path", None)
    return experiments.for_benchmark_file(path.name) if path is not None and path.parent.name == "benchmarks" else None


def _is_genai_test(item: pytest.Item) -> bool:
    return (any(name in getattr(item, "fixturenames", ()) and _is_ours(item, name) for name in GENAI_FIXTURES)
            or item.get_closest_marker("claims") is not None or _experiment(item) is not None)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "genai_device" not in metafunc.fixturenames or not _is_ours(metafunc.definition, "genai_device"):
        return
    try:
        kinds = _activate(metafunc.config).selected_kinds
    except pytest.UsageError:  # kept; raised again once collection ends, as one line rather than a collection error
        return
    params = [pytest.param(kind, marks=getattr(pytest.mark, kind), id=kind) for kind in kinds]
    metafunc.parametrize("genai_device", params, indirect=True, scope="session")


def _is_ours(item: Any, fixture_name: str) -> bool:
    """True when ``fixture_name`` resolves to this plugin's fixture (other plugins may define 'cuda' or 'ipu')."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get(fixture_name) if info is not None else None
    return bool(defs) and getattr(defs[-1].func, "__module__", "") == __name__


def _kinds_needed(item: pytest.Item) -> list[str]:
    callspec = getattr(item, "callspec", None)
    kinds = [callspec.params["genai_device"]] if "genai_device" in getattr(callspec, "params", {}) \
        and _is_ours(item, "genai_device") else []
    kinds += [kind for kind in KINDS if kind in getattr(item, "fixturenames", ()) and _is_ours(item, kind)]
    return list(dict.fromkeys(kinds))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each item with its experiment and device kinds (for ``-m quant``, ``-m hpu``) and skip absent kinds now,
    before any fixture builds a model (a broken kind's fixture errors); the first genai test may activate the plugin."""
    if STATE not in config.stash:
        if ACTIVATION_ERROR not in config.stash and not any(map(_is_genai_test, items)):
            return  # another project's session: nothing to do
        _activate(config)
    if REQUIRE_CHECKED not in config.stash:  # activated during collection: sessionstart could not check
        pytest_sessionstart(session)
    state = config.stash[STATE]
    for item, mark in [(item, mark) for item in items for mark in item.iter_markers("claims")]:
        unknown = [cid for cid in mark.args if cid not in state.claims()]
        bad_kinds = [k for k in mark.kwargs.get("kinds", ()) if k not in KINDS]
        if unknown or bad_kinds or not mark.kwargs.get("kinds"):  # stop the session with one line naming them
            what = (f"unknown claim id(s) {', '.join(unknown)}" if unknown else
                    f"unknown device kind(s) {bad_kinds}" if bad_kinds else "no kinds=(...) given")
            raise pytest.UsageError(f"{item.nodeid.split('[')[0]}: claims marker: {what}; claim ids are listed by "
                                    f"`pytest-genai claims`, kinds are {', '.join(KINDS)}")
    for item in items:
        experiment, kinds = _experiment(item), _kinds_needed(item)
        for marker in ([experiment.marker] if experiment is not None else []) + kinds:
            if item.get_closest_marker(marker) is None:
                item.add_marker(getattr(pytest.mark, marker))
        if reasons := [reason for reason in map(state.skip_reason, kinds) if reason]:
            item.add_marker(pytest.mark.skip(reason="; ".join(reasons)))


# -- fixtures ------------------------------------------------------------------------------------------------
def _device_fixture(kind: str):
    def fixture(request: pytest.FixtureRequest) -> Device:
        return _device(request, kind)

    fixture.__name__ = kind
    fixture.__doc__ = (f"The first {kind} device (a pytest_genai.devices.Device), a skip saying how to enable it, or "
                       "an error naming the exception when its probe failed.")
    return pytest.fixture(scope="session", name=kind)(fixture)


cpu, cuda, hpu, wse, rdu, ipu = map(_device_fixture, KINDS)


@pytest.fixture(scope="session")
def genai_device(request: pytest.FixtureRequest) -> Device:
    """The device this test variant runs on: parametrized over --genai-devices (ids cpu, cuda, hpu, ...)."""
    kind = getattr(request, "param", None)
    if kind is None:
        raise pytest.UsageError("genai_device is parametrized by pytest-genai; do not parametrize it yourself")
    return _device(request, kind)


def _device(request: pytest.FixtureRequest, kind: str) -> Device:
    """The session's device of ``kind``; an absent kind skips, a broken one errors with one line."""
    try:
        return _activate(request.config).device(kind)  # request.getfixturevalue: not seen at collection
    except DeviceBroken as exc:
        broken = str(exc)
    except LookupError as exc:
        pytest.skip(str(exc))
    pytest.fail(broken, pytrace=False)  # outside the except: one line, not a chained traceback


@pytest.fixture
def genai(request: pytest.FixtureRequest):
    """Records this benchmark's domain results into ``benchmark.extra_info["genai"]`` and checks paper claims."""
    from pytest_genai.plugin.recorder import GenaiRecorder

    return GenaiRecorder(request, _activate(request.config))


@pytest.fixture(scope="session")
def genai_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Resolved pytest-genai settings (CLI → env → ini → default; multi-node settings from a Slurm job step)."""
    return resolve_all(request.config)


# -- reporting -----------------------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    """Add up each test's setup, call and teardown wall time; returns None, so pytest still makes the report."""
    if STATE in item.config.stash:
        walls = item.config.stash[STATE].test_wall_s
        walls[item.nodeid] = walls.get(item.nodeid, 0.0) + call.duration


def pytest_report_header(config: pytest.Config) -> list[str]:
    if STATE not in config.stash:  # activated later by a collected genai test: the header follows collection
        return []
    state, data_dir = config.stash[STATE], resolve(config, "data_dir")
    return [f"genai: devices {','.join(state.selected_kinds)} (detected when first needed); "
            f"claims {state.claims_mode}; data: "
            + (data_dir or "no --genai-data-dir: Hugging Face cache, else the embedded slice (tiny scale)")]


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """One line per broken kind a selected test needs (and the header, where collection activated the plugin)."""
    if STATE not in config.stash:
        return []
    header = [] if _opted_in(config) else pytest_report_header(config)
    needed = {kind for item in items for kind in _kinds_needed(item)}
    return header + [f"genai: {kind} broken ({error}): its tests error; repair it or deselect them with "
                     f"-m \"not {kind}\"" for kind, error in config.stash[STATE].broken().items() if kind in needed]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if STATE not in config.stash:
        return
    from pytest_genai.plugin.summary import claims_table, contention_line, metrics_table

    state = config.stash[STATE]
    tables = [(state.records, "metrics (main metric per benchmark; pytest-genai report for all)",
               lambda: metrics_table(state.records, state.metrics(), state.test_wall_s)),
              (state.verdicts or state.not_applicable, "claims",
               lambda: claims_table(state.verdicts, state.not_applicable))]
    for shown, title, lines in tables:
        if shown:
            terminalreporter.write_sep("=", f"pytest-genai {title}")
            for line in lines():
                terminalreporter.write_line(line)
    if contention := contention_line(state.records):  # last, beside the verdicts it qualifies
        terminalreporter.write_line(contention, yellow=True, bold=True)


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    if STATE in config.stash:  # else another project's benchmarks: their JSON stays pytest-benchmark's own
        machine_info["genai"] = config.stash[STATE].machine_info()


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict[str, Any]) -> None:
    if STATE not in config.stash:
        return
    from pytest_genai.results.runs import genai_of

    state = config.stash[STATE]
    settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in resolve_all(config).items()
                if k not in ("baseline", "store", "run_noise")}
    output_json["genai"] = {"schema": SCHEMA, "claims_mode": state.claims_mode, "settings": settings,
                            "claims": state.verdicts}
    for bench in output_json.get("benchmarks", []):
        genai = genai_of(bench)
        wall = state.test_wall_s.get(bench.get("fullname", ""))
        if genai is not None and wall is not None:
            genai["test_wall"] = {"seconds": round(wall, 3), "source": "measured",
                                  "covers": "the pytest test's setup + call + teardown (fixtures such as model loads)"}


@pytest.hookimpl(hookwrapper=True, tryfirst=True, specname="pytest_sessionfinish")
def pytest_sessionfinish_empty_benchmark_json(session: pytest.Session) -> Any:
    """Write a valid, empty --benchmark-json where every benchmark was skipped (``-m hpu`` without Gaudi), which
    pytest-benchmark would not write; its handle is cleared so it does not warn that nothing was saved. A hookwrapper:
    pytest-benchmark's sessionfinish saves the JSON (or warns) before any plain hook runs."""
    config = session.config
    bs = getattr(config, "_benchmarksession", None)
    handle = getattr(bs, "json", None)
    path = config.stash.get(BENCHMARK_JSON, None)  # the path the user gave, resolved at configure time
    if STATE in config.stash and bs is not None and handle is not None and not bs.benchmarks and path is not None:
        commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
        output = config.hook.pytest_benchmark_generate_json(config=config, benchmarks=[], include_data=True,
                                                            machine_info=bs.get_machine_info(), commit_info=commit_info)
        config.hook.pytest_benchmark_update_json(config=config, benchmarks=[], output_json=output)
        from pytest_genai.atomic import write_json_atomic
        from pytest_genai.plugin.outputs import STDOUT

        if path == STDOUT:  # --benchmark-json -: argparse gave pytest-benchmark the binary stdout
            handle.write((json.dumps(output, indent=4, default=str) + "\n").encode())
            handle.flush()
        else:
            write_json_atomic(path, output)
            if hasattr(handle, "close"):  # the file argparse opened (now replaced by the atomic write)
                handle.close()
        bs.json = None
    yield


PREVIOUS_SIGTERM = pytest.StashKey[Any]()


def _sigterm_as_interrupt(config: pytest.Config) -> None:
    """SIGTERM (a CI timeout, a Slurm preemption) stops the session as Ctrl-C does, so the results so far are written;
    only in the main thread, and only where nothing else handles SIGTERM already."""
    if hasattr(config, "workerinput") or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("SIGTERM: the session stops as after Ctrl-C; the results so far are written")

    config.stash[PREVIOUS_SIGTERM] = signal.signal(signal.SIGTERM, handler)


def pytest_unconfigure(config: pytest.Config) -> None:
    if PREVIOUS_SIGTERM in config.stash:
        signal.signal(signal.SIGTERM, config.stash[PREVIOUS_SIGTERM])
        del config.stash[PREVIOUS_SIGTERM]
    warm = sys.modules.get("pytest_genai.runtime.warm")
    if warm is not None:  # the warm launcher's agent ends with the session (imported only when a job used it)
        warm.shutdown()


def _write_plots(config: pytest.Config, state: SessionState, plots: str, written: list[Any]) -> list[str]:
    """The session's plots; a benchmark that cannot be read is left out with a warning."""
    from pytest_genai.report.plots import write_plots
    from pytest_genai.results.errors import ReportInputError
    from pytest_genai.results.runs import records_from_benchmarks

    records = []
    for bench in state.records:
        try:
            records += records_from_benchmarks([bench], "plots")
        except ReportInputError as exc:
            warnings.warn(f"pytest-genai plots: skipped a benchmark: {exc}", stacklevel=2)
    written += write_plots(records, plots)
    return [f"genai plot: {path}" for path in written]


def _write_report(config: pytest.Config, state: SessionState, report: str, written: list[Any]) -> list[str]:
    from pytest_genai.plugin.session_report import write_session_report

    path = write_session_report(config, state, report, written, config.stash.get(BENCHMARK_JSON, None))
    return [f"genai report: {path}"]


def _store(config: pytest.Config, state: SessionState, store: str, written: list[Any]) -> list[str]:
    from pytest_genai.plugin.store_run import store_session
    from pytest_genai.store.location import store_label

    added = store_session(config, state, store, config.stash.get(BENCHMARK_JSON, None))
    return [] if added is None else [f"genai store: run {added.run_id} "
                                     + ("added to " if added.new else "already stored in ") + store_label(store)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The session-end outputs; one that fails is one red line, and the others, the results and exit status stand."""
    config = session.config
    if STATE not in config.stash:
        return
    from pytest_genai.results.errors import ReportInputError
    from pytest_genai.store.errors import StoreError

    state, reporter = config.stash[STATE], config.pluginmanager.get_plugin("terminalreporter")
    written: list[Any] = []  # the plots, which the report shows
    outputs = [("plots", _write_plots, "--genai-plots {}: no plots written", (ImportError, OSError)),
               ("report", _write_report, "--genai-report {}: no report written", (ReportInputError, OSError)),
               ("store", _store, "--genai-store: run not stored", (StoreError, OSError))]
    for name, write, failed, expected in outputs:
        value = resolve(config, name)
        if not value or (name == "plots" and not state.records) \
                or (name != "plots" and hasattr(config, "workerinput")):  # xdist workers: the controller writes them
            continue
        try:
            lines, red = write(config, state, value, written), False
        except Exception as exc:  # no matplotlib, an unwritable folder, a store that cannot be reached...
            why = str(exc) if isinstance(exc, expected) else f"{type(exc).__name__}: {exc}"
            lines, red = [f"genai: {failed.format(value)}: {why}"], True
        for line in lines if reporter is not None else ():
            reporter.write_line(line, red=red)
