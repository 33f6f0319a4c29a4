"""--genai-store in a pytest session: a bad value is a usage error naming the option; a store that cannot be used
is one line at the end, and the run's JSON and exit status stand."""
from __future__ import annotations

import json

import pytest

TEST = """
def test_t(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu, config={"id": "t"}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=2)
    genai.metric("tokens_per_s", 10.0)
"""


def test_a_store_that_cannot_be_used_costs_neither_the_json_nor_the_exit_status(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # a server that is not there (a URL no dialect serves
    # is a usage error at start: test_plugin.py::test_bad_settings_name_their_source)
    result = pytester.runpytest("--benchmark-json", "out.json", "--genai-store", url, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"genai: --genai-store: run not stored: store {url}*"])
    assert json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["name"] == "test_t"


def test_an_empty_store_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST)
    result = pytester.runpytest("--genai-store", " ", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*command-line option --genai-store: an empty store URL*"])


@pytest.mark.parametrize("where", ["option", "environment"])
def test_a_store_url_naming_no_file_is_a_usage_error_before_any_test(pytester: pytest.Pytester, monkeypatch,
                                                                     where: str) -> None:
    """`GENAI_STORE="sqlite:///$UNSET"`: the session said nothing, and the run went into an in-memory database."""
    pytester.makepyfile(TEST)
    if where == "environment":
        monkeypatch.setenv("GENAI_STORE", "sqlite:///")
        result = pytester.runpytest("-p", "no:cacheprovider")
    else:
        result = pytester.runpytest("--genai-store", "sqlite:///:memory:", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    source = "environment variable GENAI_STORE" if where == "environment" else "command-line option --genai-store"
    result.stderr.fnmatch_lines([f"*{source}: store sqlite:///*: names no database file*"])


def test_without_benchmark_json_the_session_document_is_stored(pytester: pytest.Pytester) -> None:
    pytest.importorskip("sqlalchemy")
    pytester.makepyfile(TEST)
    url = f"sqlite:///{pytester.path / 's.sqlite'}"
    result = pytester.runpytest("--genai-store", url, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"genai store: run 1 added to {pytester.path / 's.sqlite'}"])
    from sqlalchemy import select

    from pytest_genai.store.engine import open_store
    from pytest_genai.store.read import query_run

    with open_store(url) as store:
        run = query_run(store, "latest")
        runs = store.table("runs")
        command = store.transaction(lambda c: c.execute(select(runs.c.command)).scalar())
    assert run.records[0].metrics["tokens_per_s"] == 10.0
    assert command.startswith(f"pytest --genai-store {url} -p no:cacheprovider")  # pytester adds --basetemp


def test_the_stored_command_masks_passwords() -> None:
    from pytest_genai.plugin.store_run import session_command

    assert session_command(["--genai-store", "postgresql+psycopg://ci:s3cret@db/r", "-m", "cpu"]) == \
        "pytest --genai-store postgresql+psycopg://ci:***@db/r -m cpu"


DOLLAR_TESTS = """
import pytest

@pytest.mark.parametrize("mode", ["$\\\\frac$", "a$b$c"])
def test_t(benchmark, genai, cpu, mode):
    genai.start(experiment="quant", device=cpu, config={"id": mode, "mode": mode}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=2)
    genai.metric("tokens_per_s", 10.0 if mode == "a$b$c" else 12.0)
"""


def test_a_dollar_in_a_name_loses_nothing_at_the_sessions_end(pytester: pytest.Pytester) -> None:
    """matplotlib read `$\\frac$` as broken maths: every test passed, then a traceback, exit 1, and no report or
    stored run."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sqlalchemy")
    pytester.makepyfile(DOLLAR_TESTS)
    url = f"sqlite:///{pytester.path / 's.sqlite'}"
    result = pytester.runpytest("--genai-plots", "plots", "--genai-report", "r.md", "--genai-store", url,
                                "-p", "no:cacheprovider")
    assert result.ret == 0
    result.assert_outcomes(passed=2)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["genai plot: *plots*by_mode*.png", "genai report: *r.md", "genai store: run 1 added to *s.sqlite"])


@pytest.mark.parametrize("broken", ["plots", "report", "store"])
def test_one_output_that_fails_is_one_red_line_and_the_others_are_written(pytester: pytest.Pytester, monkeypatch,
                                                                          broken: str) -> None:
    """Any error writing one session-end output (not only the expected OSError) was a traceback and exit 1."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sqlalchemy")
    import pytest_genai.plugin.session_report as session_report
    import pytest_genai.plugin.store_run as store_run
    import pytest_genai.report.plots as plots

    def boom(*args, **kwargs):
        raise RuntimeError("an unexpected fault")

    target = {"plots": (plots, "write_plots"), "report": (session_report, "write_session_report"),
              "store": (store_run, "store_session")}[broken]
    monkeypatch.setattr(*target, boom)
    pytester.makepyfile(DOLLAR_TESTS)
    url = f"sqlite:///{pytester.path / 's.sqlite'}"
    result = pytester.runpytest("--genai-plots", "plots", "--genai-report", "r.md", "--genai-store", url,
                                "-p", "no:cacheprovider")
    assert result.ret == 0
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    option = {"plots": "--genai-plots *plots", "report": "--genai-report *r.md", "store": "--genai-store"}[broken]
    result.stdout.fnmatch_lines([f"genai: {option}: * RuntimeError: an unexpected fault"])
    assert ((pytester.path / "r.md").exists()) == (broken != "report")
    assert ((pytester.path / "s.sqlite").exists()) == (broken != "store")


def test_the_store_message_names_the_store_as_its_path(pytester: pytest.Pytester) -> None:
    """`genai store: run 2 added` said not which store; a plain file is named by its path, unquoted."""
    pytest.importorskip("sqlalchemy")
    pytester.makepyfile(TEST)
    path = pytester.path / "p q%20r.sqlite"
    first = pytester.runpytest("--genai-store", str(path), "-p", "no:cacheprovider")
    first.stdout.fnmatch_lines([f"genai store: run 1 added to {path}"])
    again = pytester.runpytest("--genai-store", str(path), "--benchmark-json", "b.json", "-p", "no:cacheprovider")
    again.stdout.fnmatch_lines([f"genai store: run 2 added to {path}"])
