"""`store add` from a pipe or `<(...)`, Ctrl-C in `store add` and `gate -o`, and a reader that goes away (`| head`):
each one line or none, never a traceback (docs/reliability.md)."""
from __future__ import annotations

import io
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from pytest_genai.cli import main

from .test_store import generation_doc


def test_store_add_reads_a_pipe_once(tmp_path: Path, capsys) -> None:
    """`store add <(cat run.json)` read the file twice: the second read of the pipe was empty."""
    data = json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)).encode()
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        code = main(["store", "add", f"/dev/fd/{read_end}", "--store", str(tmp_path / "s.sqlite")])
    finally:
        writer.join()
        os.close(read_end)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"/dev/fd/{read_end}: added as run 1" in captured.out


def _main_catching_ctrl_c(argv: list[str]) -> int:
    try:
        return main(argv)
    except KeyboardInterrupt:  # a failure of this test, not the end of the test session
        pytest.fail("KeyboardInterrupt escaped the command (a traceback for the user)")


def test_ctrl_c_in_store_add_says_how_many_were_added(tmp_path: Path, capsys, monkeypatch) -> None:
    """Ctrl-C printed a KeyboardInterrupt traceback."""
    import pytest_genai.store.write as write

    runs = []
    for i in range(4):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(generation_doc("a100", f"2026-02-0{i + 1}T00:00:00", 250.0 + i)))
        runs.append(str(path))
    real, calls = write.add_rows, []

    def interrupted_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(write, "add_rows", interrupted_third)
    assert _main_catching_ctrl_c(["store", "add", *runs, "--store", str(tmp_path / "s.sqlite")]) == 130
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"pytest-genai store: interrupted: 2 of 4 added to {tmp_path / 's.sqlite'} "
                                "(0 already stored); run the same command again to add the rest"]


def test_ctrl_c_in_gate_is_one_line_exit_130(tmp_path: Path, capsys, monkeypatch) -> None:
    import pytest_genai.cli.report as report_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_cli, "load_run", interrupted)
    run = tmp_path / "r.json"
    run.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    assert _main_catching_ctrl_c(["gate", str(run), str(run), "-o", str(tmp_path / "gate.md")]) == 130
    assert capsys.readouterr().err.strip() == "pytest-genai gate: interrupted"
    assert not (tmp_path / "gate.md").exists()


class _GoneReader(io.StringIO):
    """stdout whose reader went away (`| head -1`): every write raises as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("command", [["store", "info"], ["store", "list"], ["history", "tokens_per_s"]])
def test_a_reader_that_went_away_is_exit_0_quietly(command: list[str], tmp_path: Path, capsys, monkeypatch) -> None:
    """`store info | head -1` exited 2 with "Broken pipe"."""
    monkeypatch.chdir(tmp_path)  # history writes its default plot here
    run = tmp_path / "r.json"
    run.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    store = str(tmp_path / "s.sqlite")
    assert main(["store", "add", str(run), "--store", store]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    assert main([*command, "--store", store]) == 0
    err = capsys.readouterr().err
    assert "Broken pipe" not in err and "error" not in err and "Traceback" not in err, err
