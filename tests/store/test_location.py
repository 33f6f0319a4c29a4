"""Which database a store is (pure, but for the round trips of a plain path through `store add` and `list`)."""
from __future__ import annotations

import builtins
import os
from pathlib import Path

import pytest

from pytest_genai.store.location import default_url, normalize_url, shown_url, store_label


def test_default_is_a_sqlite_file_in_the_xdg_data_folder_without_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_platformdirs(name: str, *args, **kwargs):
        if name == "platformdirs":
            raise ImportError("no platformdirs")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_platformdirs)
    assert default_url({"XDG_DATA_HOME": "/data"}) == "sqlite:////data/pytest-genai/results.sqlite"
    home = os.path.expanduser("~")
    assert default_url({}) == f"sqlite:///{home}/.local/share/pytest-genai/results.sqlite"


def test_genai_store_and_plain_paths(tmp_path) -> None:
    assert default_url({"GENAI_STORE": "postgresql+psycopg://ci@db/results"}) == "postgresql+psycopg://ci@db/results"
    assert normalize_url(str(tmp_path / "r.sqlite")) == f"sqlite:///{tmp_path}/r.sqlite"
    with pytest.raises(ValueError, match="an empty store URL"):
        normalize_url("  ")


def test_messages_never_show_the_password() -> None:
    assert shown_url("postgresql+psycopg://ci:s3cret@db:5432/results") == "postgresql+psycopg://ci:***@db:5432/results"
    assert store_label("postgresql+psycopg://ci:s3cret@db/r") == "postgresql+psycopg://ci:***@db/r"


def test_messages_show_a_store_file_as_its_path(tmp_path) -> None:
    """`p q.sqlite` was shown as the quoted URL `sqlite:///.../p%20q.sqlite` (and `p%20q.sqlite` as `p%2520q`)."""
    for name in ("p q.sqlite", "p%20q.sqlite"):
        assert store_label(normalize_url(str(tmp_path / name))) == str(tmp_path / name)
    assert store_label("sqlite:///file:x.sqlite?mode=ro&uri=true") == "sqlite:///file:x.sqlite?mode=ro&uri=true"


@pytest.mark.parametrize("argv", [["gate", "--baseline", "latest", "cur.json"], ["history", "tokens_per_s"],
                                  ["store", "list"], ["compare", "run=1", "run=2"]])
def test_an_empty_store_url_is_one_line_bad_input_in_every_command(argv, capsys) -> None:
    """It was a ValueError traceback and exit 1, which for gate means 'regression'."""
    from pytest_genai.cli import main

    assert main([*argv, "--store", " "]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "an empty store URL" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["p%20q.sqlite", "a?b", "m1.sqlite?mode=memory", "m2.sqlite?mode=ro", "h#1.sqlite",
                                  "ü ä.sqlite"])
def test_a_plain_path_means_that_file(name: str, tmp_path: Path, monkeypatch, capsys) -> None:
    """A plain path went through URI parsing: `p%20q.sqlite` wrote `p q.sqlite`, `a?b` wrote `a`, and `list` with the
    same value then found no database."""
    import json

    from pytest_genai.cli import main

    from .test_store import generation_doc

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    run = tmp_path / "runs" / "run.json"
    run.write_text(json.dumps(generation_doc("a100", "2026-02-01T00:00:00", 250.0)))
    assert main(["store", "add", str(run), "--store", name]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == sorted([name, "runs"])
    capsys.readouterr()
    assert main(["store", "list", "--store", name]) == 0
    assert "a100" in capsys.readouterr().out


@pytest.mark.parametrize("query", ["?mode=ro", "?mode=ro&uri=true", "?cache=shared"])
def test_sqlite_uri_parameters_sqlite_would_ignore_are_refused(query: str, tmp_path: Path) -> None:
    """`sqlite:///x.sqlite?mode=ro` was opened read-write (the driver drops `mode` without a `file:` URI)."""
    with pytest.raises(ValueError, match="only in a file: URI with uri=true"):
        normalize_url(f"sqlite:///{tmp_path}/x.sqlite{query}")
    normalize_url(f"sqlite:///file:{tmp_path}/x.sqlite{query}&uri=true")
