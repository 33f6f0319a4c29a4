"""Progress: INFO lines for each long step (``--log-cli-level=INFO``), tqdm bars only where someone sees them."""
import io
import logging

import pytest

from pytest_genai import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_steps_yields_every_item_and_logs_start_and_end(caplog):
    caplog.set_level(logging.INFO, logger="pytest_genai")
    assert list(progress.steps(range(3), "timing rounds", unit="rounds")) == [0, 1, 2]
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "timing rounds: 3 rounds ..."
    assert lines[1].startswith("timing rounds: 3 rounds done in ")


def test_steps_without_a_length_logs_what_it_counted(caplog):
    caplog.set_level(logging.INFO, logger="pytest_genai")
    assert list(progress.steps(iter("ab"), "pages", unit="pages")) == ["a", "b"]
    assert caplog.records[0].getMessage() == "pages: pages ..."
    assert caplog.records[-1].getMessage().startswith("pages: 2 pages done")


def test_inner_loops_log_at_debug_only(caplog):
    caplog.set_level(logging.INFO, logger="pytest_genai")
    list(progress.steps(range(2), "scoring", level=logging.DEBUG))
    assert caplog.records == []


def test_phase_logs_its_end_and_a_stop_on_error(caplog):
    caplog.set_level(logging.INFO, logger="pytest_genai")
    with progress.phase("converting x", hint="once"):
        pass
    with pytest.raises(KeyError), progress.phase("loading y"):
        raise KeyError("y")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "converting x (once) ..."
    assert lines[1].startswith("converting x: done in ")
    assert lines[3].startswith("loading y: stopped after ")


def test_bars_only_on_a_terminal():
    assert progress.bars_enabled(io.StringIO()) is False
    pytest.importorskip("tqdm")
    assert progress.bars_enabled(_Tty()) is True


def test_logger_names_stay_in_one_tree():
    assert progress.logger().name == "pytest_genai"
    assert progress.logger("pytest_genai.evals.models").name == "pytest_genai.evals.models"
    assert progress.logger("mine").name == "pytest_genai.mine"


def test_log_cli_shows_each_step_live(pytester):
    pytester.makepyfile(
        """
        from pytest_genai import progress

        def test_long():
            for _ in progress.steps(range(2), "sweep", unit="points"):
                pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--log-cli-level=INFO")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*sweep: 2 points ...*", "*sweep: 2 points done in *"])
