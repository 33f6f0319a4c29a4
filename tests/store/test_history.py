"""``pytest-genai history``'s series: one line per benchmark series, and every finite value drawn."""
from __future__ import annotations

import pytest

from pytest_genai.cli.history import lines
from pytest_genai.store.read import Point


def _point(run_id: int, benchmark: str, value: float, generation: str = "cpu", config_id: str | None = "cpu",
           model: str | None = "tiny") -> Point:
    return Point(run_id, f"2026-0{run_id}-01T00:00:00", None, "cpu", generation, benchmark, config_id, model, value,
                 "tokens/s", "measured", 0)


def test_benchmarks_sharing_a_parameter_id_are_separate_lines():
    """``test_small[cpu]`` and ``test_big[cpu]`` both have config id ``cpu``: two series, not one zig-zag."""
    points = [_point(1, "test_small[cpu]", 100.0), _point(1, "test_big[cpu]", 5.0),
              _point(2, "test_small[cpu]", 101.0), _point(2, "test_big[cpu]", 5.1)]
    got = {label: [v for _, v in pts] for label, pts in lines(points).items()}
    assert got == {"cpu · test_small[cpu]": [100.0, 101.0], "cpu · test_big[cpu]": [5.0, 5.1]}


def test_one_benchmark_is_one_line_per_generation_and_distinct_configs_keep_their_labels():
    one = lines([_point(1, "t[x]", 1.0), _point(2, "t[x]", 2.0), _point(1, "t[x]", 3.0, generation="a100")])
    assert {label: [v for _, v in pts] for label, pts in one.items()} == {"cpu": [1.0, 2.0], "a100": [3.0]}
    two = lines([_point(1, "t[a]", 1.0, config_id="a"), _point(1, "t[b]", 2.0, config_id="b")])
    assert set(two) == {"cpu · a", "cpu · b"}


def test_the_trend_plot_draws_zero_and_negative_values(tmp_path, monkeypatch):
    """An accuracy that fell to 0 is what a trend is for: every finite value is a point of the line."""
    pytest.importorskip("matplotlib")
    import datetime

    from pytest_genai.report import plots

    drawn = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    t = [datetime.datetime(2026, 1, d) for d in (1, 2, 3, 4, 5)]
    plots.trend_plot({"cpu": list(zip(t, [0.52, 0.0, -0.5, float("nan"), 0.51]))}, [], "acc", "", tmp_path / "a.png")
    (line,) = drawn[0].axes[0].lines
    assert list(line.get_ydata()) == [0.52, 0.0, -0.5, 0.51]
    low, high = drawn[0].axes[0].get_ylim()
    assert low < -0.5 and high > 0.52
