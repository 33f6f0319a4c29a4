"""Where `report` and `history` write: every derived file name slugged, capped and inside its folder (a property over
names), two outputs of one command never one file, and the messages when an output path is wrong or the disk is full
(docs/reliability.md)."""
from __future__ import annotations

import errno
import json
import os
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.report import plots
from pytest_genai.results.runs import records_from_benchmarks

from .runfiles import bench, run_doc

ROOT = Path(__file__).resolve().parents[2]
#: names as runs and users give them: separators, dots, spaces, control characters, non-ASCII, any length
NAMES = st.one_of(st.text(min_size=0, max_size=300),
                  st.text(alphabet=string.ascii_letters + "/\\. -_%:\x00\x1b", min_size=0, max_size=300),
                  st.sampled_from(["..", ".", "../../x", "tokens_per_s../../x", "/etc/passwd", "h100/sxm", "h100 sxm",
                                   "H100-SXM", "x" * 240, "a/" * 120]))


def _inside(folder: Path, name: str) -> bool:
    path = folder / name
    return (os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)
            and Path(os.path.realpath(path)).parent == Path(os.path.realpath(folder))
            and not name.startswith(".") and "\x00" not in name and len(name.encode("utf-8")) <= 255)


@settings(max_examples=300, deadline=None)
@given(metric=NAMES)
def test_history_default_plot_path_stays_in_the_working_folder(metric: str, tmp_path_factory) -> None:
    """`history 'tokens_per_s../../x'` wrote its default plot above the working folder."""
    from pytest_genai.cli.history import default_plot

    name = default_plot(metric)
    assert name.startswith("history-") and name.endswith(".png")
    assert _inside(Path("/work/folder"), name)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAMES, min_size=1, max_size=12), experiment=NAMES)
def test_plot_names_from_any_names_are_distinct_capped_and_inside_the_folder(names, experiment, tmp_path_factory) -> None:
    """Generation and benchmark names as the plot writers name files: roofline per generation, the others per
    experiment and test; names that slug alike (`h100/sxm`, `h100 sxm`) shared one file."""
    from pytest_genai.report.output import NameAllocator, file_stem

    folder = Path("/work/plots")
    taken = NameAllocator(["report.png"])
    got = [taken.take(file_stem("roofline", n)) for n in names]
    got += [plots._path(folder, taken, experiment, f"{experiment} ({n})", "tokens_per_s", "vs", n).name for n in names]
    assert len({g.casefold() for g in got}) == len(got) and "report.png" not in got
    assert all(_inside(folder, g) and g.endswith(".png") for g in got)


def test_generations_whose_names_slug_alike_get_a_plot_each(tmp_path: Path) -> None:
    """"wrote 3 plot(s)" left 2: `h100/sxm` and `h100 sxm` both wrote roofline_h100-sxm.png."""
    pytest.importorskip("matplotlib")
    from .test_plots import dab

    recs = [dab(2, 256, 40.0, 90.0, gen=g) for g in ("h100/sxm", "h100 sxm", "h100-sxm")]
    paths = plots.roofline_plots(records_from_benchmarks(recs, "x"), tmp_path)
    assert len(paths) == 3 and len(set(paths)) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_genai.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "MPLBACKEND": "Agg"}, timeout=300)


def _run(tmp_path: Path, generation: str = "h100-sxm") -> Path:
    from .test_plots import dab

    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_doc([dab(2, 256, 40.0, 90.0, gen=generation),
                                        dab(4, 2048, 400.0, 600.0, gen=generation)])))
    return path


def test_a_report_named_like_a_plot_in_the_plots_folder_keeps_both(tmp_path: Path) -> None:
    """`report -o DIR/x.png --plots DIR` replaced a plot with the report (or the report with the plot)."""
    pytest.importorskip("matplotlib")
    run = _run(tmp_path)
    out = cli("report", str(run), "-o", "plots/roofline_h100-sxm.png", "--plots", "plots", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "plots" / "roofline_h100-sxm.png").read_text().startswith("# pytest-genai report")
    pngs = [p for p in (tmp_path / "plots").iterdir() if p.read_bytes().startswith(b"\x89PNG")]
    assert pngs and f"wrote {len(pngs)} plot(s)" in out.stderr
    assert all(p.name in (tmp_path / "plots" / "roofline_h100-sxm.png").read_text() for p in pngs)


def test_a_240_character_generation_name_still_gives_a_report(tmp_path: Path) -> None:
    """The plot's file name had no length cap: ENAMETOOLONG, and no report written."""
    pytest.importorskip("matplotlib")
    run = _run(tmp_path, generation="g" * 240)
    out = cli("report", str(run), "-o", "report.md", "--plots", "plots", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "report.md").read_text().startswith("# pytest-genai report")
    names = [p.name for p in (tmp_path / "plots").iterdir()]
    assert max(len(n) for n in names) == 100 and any(n.startswith("roofline_ggg") for n in names)  # 96 + .png


def test_report_plots_empty_is_refused(tmp_path: Path) -> None:
    """`--plots ''` wrote the plots into a temp folder deleted at exit and linked them from the Markdown."""
    run = _run(tmp_path)
    out = cli("report", str(run), "-o", "report.md", "--plots", "", cwd=tmp_path)
    assert out.returncode == 2 and "--plots '': an empty folder name" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "report.md").exists()


def _store(tmp_path: Path, metric: str = "tokens_per_s", series: int = 1) -> Path:
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_document

    path = tmp_path / "r.sqlite"
    with open_store(f"sqlite:///{path}") as store:
        for day in (1, 2):
            doc = run_doc([bench(f"test_t[g{i}]", "quant", {"id": f"c{i}"}, {metric: float(day + i)},
                                 device=("cuda", f"gen{i}")) for i in range(series)])
            doc["datetime"] = f"2026-01-0{day}T00:00:00"
            add_document(store, doc, f"run{day}.json")
    return path


def test_history_of_a_metric_named_like_a_path_writes_inside_the_working_folder(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    store = _store(work, "tokens_per_s../../x")
    out = cli("history", "tokens_per_s../../x", "--store", str(store), cwd=work)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.rglob("*.png")) == ["history-tokens_per_s..-..-x.png"]
    assert (work / "history-tokens_per_s..-..-x.png").is_file()


def test_history_table_and_plot_on_one_path_is_refused(tmp_path: Path) -> None:
    """`history -o X --plot X` kept one of the two."""
    store = _store(tmp_path)
    for argv in (["-o", "x", "--plot", "x"], ["-o", "history-tokens_per_s.png"]):
        out = cli("history", "tokens_per_s", "--store", str(store), *argv, cwd=tmp_path)
        assert out.returncode == 2 and "one would replace the other" in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "x").exists() and not (tmp_path / "history-tokens_per_s.png").exists()


def test_history_plot_into_a_folder_suggests_a_png(tmp_path: Path) -> None:
    """`--plot DIR` suggested `DIR/report.md` for a PNG (and was checked only for a SQLite store)."""
    store = _store(tmp_path)
    (tmp_path / "plots").mkdir()
    out = cli("history", "tokens_per_s", "--store", str(store), "--plot", "plots", cwd=tmp_path)
    assert out.returncode == 2 and "--plot plots: is a folder; give a file path, e.g. plots/history-tokens_per_s.png" \
        in out.stderr, out.stderr


def test_a_full_disk_under_history_plot_names_the_path(tmp_path: Path, monkeypatch, capsys) -> None:
    """The message was "cannot write No space left on device": no path."""
    pytest.importorskip("matplotlib")
    import pytest_genai.atomic as atomic
    from pytest_genai.cli.history import history_main

    store = _store(tmp_path)

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    assert history_main(["tokens_per_s", "--store", str(store), "--plot", str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"pytest-genai history: error: cannot write {tmp_path / 't.png'}: No space left on device"


def test_a_33_series_legend_covers_neither_the_title_nor_the_plot(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    import datetime

    drawn = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    t = [datetime.datetime(2026, 1, d) for d in (1, 2, 3)]
    lines = {f"generation-{i:02d} · config-{i}": list(zip(t, [i, i + 1.0, i + 2.0])) for i in range(33)}
    plots.trend_plot(lines, [], "tokens_per_s", "tokens/s", tmp_path / "t.png")
    fig = drawn[0]
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    (legend,) = fig.legends or [ax.get_legend()]
    box = legend.get_window_extent(renderer)
    assert not box.overlaps(ax.title.get_window_extent(renderer))
    assert not box.overlaps(ax.get_window_extent(renderer))
    figure = fig.bbox
    assert box.x0 >= figure.x0 - 1 and box.x1 <= figure.x1 + 1 and box.y0 >= figure.y0 - 1 and box.y1 <= figure.y1 + 1
