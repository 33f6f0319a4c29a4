"""Change points in ``pytest-genai history``: found by Apache Otava, listed with their run, step and p-value, marked on
the trend plot; ``--changes`` exits 1 on a step in the metric's bad direction; without Otava, a clear message."""
from __future__ import annotations

import contextlib
import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_genai.store.changes import ChangePointsUnavailable, find_changes
from pytest_genai.cli.history import history_main, line_points
from pytest_genai.store.read import Point

ROOT = Path(__file__).resolve().parents[2]


def _point(run_id: int, value: float, generation: str = "cpu") -> Point:
    return Point(run_id, f"2026-03-{run_id:02d}T00:00:00Z", f"c{run_id:02d}" + "0" * 38, "cpu", generation,
                 "test_decode", "decode", "tiny", value, "tokens/s", "measured", 0)


def _series(levels: list[tuple[int, float]], noise: float = 0.005, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.uniform(-noise, noise)) for n, level in levels for _ in range(n)]


def test_a_step_is_found_at_its_run_with_its_size_and_significance() -> None:
    pytest.importorskip("otava")
    values = _series([(8, 1000.0), (8, 800.0)])
    points = [_point(i + 1, v) for i, v in enumerate(values)]
    (cp,) = find_changes(line_points(points), "higher")
    assert cp.line == "cpu" and cp.run_id == 9 and cp.run_time == "2026-03-09T00:00:00Z"
    assert cp.step == pytest.approx(-0.2, abs=0.01) and cp.pvalue < 0.001 and cp.worse is True
    assert find_changes(line_points([_point(i + 1, v) for i, v in enumerate(_series([(16, 1000.0)]))]), "higher") == []
    assert find_changes(line_points(points), "lower")[0].worse is False  # 20 % less time is better


def _runfiles() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("genai_runfiles", ROOT / "tests" / "report" / "runfiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _store(store_url: str, values: list[float], metric: str = "tokens_per_s") -> None:
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_document

    rf = _runfiles()
    with open_store(store_url) as store:
        for i, v in enumerate(values, start=1):
            doc = rf.run_doc([rf.bench("test_decode", "quant", {"id": "decode"}, {metric: v})])
            doc["datetime"] = f"2026-03-{i:02d}T00:00:00Z"
            doc["commit_info"] = {"id": f"c{i:02d}" + "0" * 38, "branch": "main", "dirty": False}
            add_document(store, doc, f"r{i}.json")


def _history(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = history_main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_history_lists_the_change_points_and_changes_exits_1_on_a_worse_step(store_url: str, tmp_path: Path) -> None:
    pytest.importorskip("otava")
    _store(store_url, _series([(8, 1000.0), (8, 800.0)]))
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--no-plot")
    assert code == 0 and "Change points (Apache Otava's e-divisive means" in out
    assert re.search(r"\| cpu +\| +9 \| 2026-03-09T00:00:00Z \| c09000000000 \| +1000 \| +800\.\d \| -(19\.9\d|20\.0\d)% "
                     r"\| [0-9.e-]+ \| worse +\|", out)
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--changes", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["worse"] == 1 and doc["change_points"][0]["run"] == 9
    assert doc["change_points"][0]["commit"] == "c09" + "0" * 9
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--format", "json", "--no-plot")
    assert code == 0 and json.loads(out)["change_points"][0]["pvalue"] < 0.001


def test_changes_lists_an_improvement_and_exits_0(store_url: str, tmp_path: Path) -> None:
    pytest.importorskip("otava")
    _store(store_url, _series([(8, 1000.0), (8, 1250.0)]))
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--changes")
    assert code == 0 and re.search(r"\| \+2[45]\.\d\d% \| [0-9.e-]+ \| better", out)


def test_changes_on_a_steady_series_is_none_and_exit_0(store_url: str) -> None:
    pytest.importorskip("otava")
    _store(store_url, _series([(12, 1000.0)]))
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--changes")
    assert code == 0 and "Change points: none" in out


def test_the_trend_plot_marks_each_change_point(store_url: str, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("otava")
    pytest.importorskip("matplotlib")
    from pytest_genai.report import plots

    drawn = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    _store(store_url, _series([(8, 1000.0), (8, 800.0)]))
    code, _, err = _history("tokens_per_s", "--store", store_url, "--plot", str(tmp_path / "h.png"))
    assert code == 0 and (tmp_path / "h.png").is_file()
    ax = drawn[0].axes[0]
    marks = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(marks) == 1 and "change point" in [t.get_text() for t in drawn[0].legends[0].get_texts()]
    assert [t.get_text() for t in ax.texts] == ["-20.0%"]


def test_without_otava_history_says_so_and_changes_is_a_one_line_error(store_url: str, monkeypatch) -> None:
    from pytest_genai.store import changes

    def missing() -> Any:
        raise ChangePointsUnavailable(changes.INSTALL_HINT)

    monkeypatch.setattr(changes, "_detector", missing)
    _store(store_url, [1000.0, 1001.0, 999.0])
    code, out, _ = _history("tokens_per_s", "--store", store_url, "--no-plot")
    assert code == 0 and "Change points: not computed (change points need apache-otava" in out
    code, out, err = _history("tokens_per_s", "--store", store_url, "--changes")
    assert code == 2 and err.count("\n") == 1 and "--changes: change points need apache-otava" in err


def test_a_metric_name_with_markdown_in_it_is_text_in_the_heading(store_url: str) -> None:
    """A metric's name comes from the runs and the command line: in the Markdown heading it is escaped text, so it
    cannot open a link, raw HTML or a table there."""
    name = "tok*s<b>|[x](y)"
    _store(store_url, _series([(3, 1000.0)]), metric=name)
    code, out, _ = _history(name, "--store", store_url, "--no-plot")
    heading = out.splitlines()[0]
    assert code == 0 and heading == r"## pytest-genai history: tok\*s\<b>\|\[x](y)"
