"""Plots: each kind is written as a real PNG, and the roofline's ridge sits where the device spec puts it."""
import gzip
import json
from pathlib import Path

import pytest

from pytest_genai.devices.specs import get_spec
from pytest_genai.report import plots
from pytest_genai.report.plots import quality_series, roofline_figure, write_plots
from pytest_genai.results.registry import metric_info_from
from pytest_genai.results.runs import records_from_benchmarks, run_from_json
from pytest_genai.claims import load_metrics

from .runfiles import bench, run_doc

pytest.importorskip("matplotlib")
PNG = b"\x89PNG\r\n\x1a\n"


def dab(layers: int, hidden: int, ai: float, tflops: float, gen: str = "h100-sxm", **extra):
    metrics = {"arithmetic_intensity_modeled": ai, "achieved_tflops": tflops, "tokens_per_s": tflops * 1e3, **extra}
    config = {"layers": layers, "hidden": hidden, "dtype": "bf16", "id": f"L{layers}-H{hidden}"}
    return bench(f"test_l1[{gen}-L{layers}-H{hidden}]", "dabench", config,
                 metrics, device=("cuda", gen), model=None, labels={"bound": "memory" if ai < 295 else "compute"})


def records():
    out = [dab(layers, hidden, ai, tf) for layers, hidden, ai, tf in
           [(2, 256, 40.0, 90.0), (4, 256, 42.0, 100.0), (2, 2048, 400.0, 600.0), (4, 2048, 410.0, 640.0)]]
    for strategy, tps in (("ddp", 900.0), ("fsdp", 700.0), ("zero3", 500.0)):
        for batch in (2, 4):
            out.append(bench(f"test_ft[cpu-{strategy}-{batch}]", "finetune", {"strategy": strategy, "batch_size": batch},
                             {"tokens_per_s": tps * batch}))
    for dtype, ips in (("fp32", 85.0), ("bf16", 111.0)):
        out.append(bench(f"test_d[cpu-{dtype}]", "diffusion", {"dtype": dtype, "id": f"sr-{dtype}"}, {"images_per_s": ips}))
    for mode, ratio, ppl in (("fp32", 1.0, 14.9), ("fake", 3.2, 15.3), ("real", 3.9, 15.2), ("real4", 6.5, 19.0)):
        out.append(bench(f"test_q[cpu-{mode}]", "quant", {"mode": mode}, {"compression_ratio": ratio, "perplexity": ppl}))
    return out


def test_each_plot_kind_is_a_nonempty_png(tmp_path: Path) -> None:
    info = metric_info_from(load_metrics())
    paths = write_plots(records_from_benchmarks(records(), "x"), tmp_path / "plots", info)
    names = sorted(p.name for p in paths)
    assert names == sorted([
        "roofline_h100-sxm.png",
        "dabench_tokens_per_s_vs_layers.png", "dabench_tokens_per_s_vs_hidden.png",
        "finetune_tokens_per_s_vs_batch_size.png", "finetune_tokens_per_s_by_strategy.png",
        "quant_perplexity_vs_compression.png", "diffusion_images_per_s_by_dtype.png",
    ])
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 5_000, p
    assert not list((tmp_path / "plots").glob(".*.tmp"))


def _roof_vertices(fig, kind: str):
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_gid() == f"roof-{kind}"]
    return list(line.get_xdata()), list(line.get_ydata())


def test_roofline_ridge_is_where_the_spec_says() -> None:
    spec = get_spec("h100-sxm")
    recs = run_from_json(run_doc([dab(2, 256, 40.0, 90.0), dab(2, 2048, 400.0, 600.0)]), "x").records
    xs, ys = _roof_vertices(roofline_figure(recs, "t"), "spec")
    knee = max(i for i, y in enumerate(ys) if y < max(ys)) + 1  # first vertex on the flat compute roof
    assert xs[knee] == pytest.approx(spec.ridge_point_for("bf16"), rel=1e-9)
    assert ys[knee] == pytest.approx(spec.peak_tflops("bf16"))
    # below the ridge the roof is bandwidth x intensity
    assert ys[0] == pytest.approx(spec.mem_bandwidth_gbs * xs[0] / 1e3)


def test_recorded_ceilings_are_drawn_both_measured_and_spec() -> None:
    recs = run_from_json(run_doc([dab(2, 256, 40.0, 90.0, ceiling_tflops_measured=700.0, ceiling_gbs_measured=2800.0,
                                      ceiling_tflops_spec=989.4, ceiling_gbs_spec=3350.0)]), "x").records
    fig = roofline_figure(recs, "t")
    mx, my = _roof_vertices(fig, "measured")
    assert mx[1] == pytest.approx(700.0 * 1e3 / 2800.0) and max(my) == pytest.approx(700.0)
    sx, _ = _roof_vertices(fig, "spec")
    assert 989.4e3 / 3350.0 == pytest.approx(sx[1])


def test_runs_without_plottable_metrics_write_nothing(tmp_path: Path) -> None:
    assert write_plots(records_from_benchmarks([bench("t", metrics={"acc": 0.5})], "x"), tmp_path, {}) == []


# --- labels say what varies; nothing runs off the figure ---------------------------------------------------------

def quant_records():
    """The A1 quality rows as the suite records them: three tasks x fp32 / fake / real, incidental keys included."""
    acc = {"hellaswag": (0.5, 0.4875, 0.4875), "boolq": (0.625, 0.5625, 0.5625)}
    out = []
    for task in ("wikitext", "hellaswag", "boolq"):
        for i, mode in enumerate(("fp32", "fake", "real")):
            config = {"mode": mode, "task": task, "precision": "fp32" if mode == "fp32" else "bf16/int8",
                      "backend": "none" if mode == "fp32" else "native",
                      "data_source": f"/work/shared/data/{task}/validation.jsonl",
                      "n_examples": 1 if task == "wikitext" else 40, "limit": None if task == "wikitext" else 40,
                      "seed": 1234, "max_length": 512}
            metrics = {"tokens_per_s": 900.0 if mode == "fp32" else 600.0 + 10 * i}
            if mode != "fp32":  # the fp32 baseline records no compression ratio
                metrics["compression_ratio"] = 3.243
            if task == "wikitext":
                metrics["perplexity"] = 14.9 + 0.03 * i
            else:
                metrics["acc"] = acc[task][i]
            out.append(bench(f"test_quantized_model_quality[smollm2-135m-cpu-{mode}-{task}]", "quant", config,
                             metrics, model="smollm2-135m"))
    return out


def test_quality_vs_compression_has_a_series_per_task_and_a_point_per_plan() -> None:
    recs = [r for r in run_from_json(run_doc(quant_records()), "x").records if "acc" in r.metrics]
    series, series_keys, point_keys = quality_series(recs, "acc")
    assert series_keys == ["task"] and point_keys == ["precision", "mode"]
    assert series == {
        "hellaswag": [(1.0, 0.5, "fp32"), (3.243, 0.4875, "bf16/int8 fake"), (3.243, 0.4875, "bf16/int8 real")],
        "boolq": [(1.0, 0.625, "fp32"), (3.243, 0.5625, "bf16/int8 fake"), (3.243, 0.5625, "bf16/int8 real")],
    }


def _captured_figures(monkeypatch, records, tmp_path):
    figures = {}
    save = plots._save

    def keep(fig, path):
        figures[Path(path).name] = fig
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    write_plots(records_from_benchmarks(records, "x"), tmp_path, metric_info_from(load_metrics()))
    return figures


def _legend_texts(fig) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [line for leg in legends for t in [leg.get_title(), *leg.get_texts()] for line in t.get_text().split("\n")]


def _drawn_ticks(axis) -> list:
    """Tick labels inside the axis' view (matplotlib keeps, but does not draw, the ones beyond it)."""
    lo, hi = sorted(axis.get_view_interval())
    return [tick.label1 for tick in axis.get_major_ticks() if lo <= tick.get_loc() <= hi]


def layout_problems(fig) -> list[str]:
    """What a reader would stumble on: a legend over the plot or off the figure, text cut at the figure's edge,
    x tick labels on top of each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    problems = []

    def inside(box) -> bool:
        return box.x0 >= page.x0 - 1 and box.y0 >= page.y0 - 1 and box.x1 <= page.x1 + 1 and box.y1 <= page.y1 + 1

    for ax in fig.axes:
        plot_area = ax.get_window_extent(renderer)
        for leg in list(fig.legends) + ([ax.get_legend()] if ax.get_legend() else []):
            box = leg.get_window_extent(renderer)
            if not inside(box):
                problems.append("legend runs off the figure")
            if box.overlaps(plot_area):
                problems.append("legend covers the plot")
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts, *_drawn_ticks(ax.xaxis), *_drawn_ticks(ax.yaxis)]
        for text in texts:
            if text.get_visible() and text.get_text() and not inside(text.get_window_extent(renderer)):
                problems.append(f"text cut: {text.get_text()!r}")
        ticks = [t.get_window_extent(renderer) for t in _drawn_ticks(ax.xaxis) if t.get_visible() and t.get_text()]
        if any(a.overlaps(b) for a, b in zip(ticks, ticks[1:])):
            problems.append("x tick labels overlap")
    return problems


def test_legends_name_what_varies_never_paths_or_whole_configs(monkeypatch, tmp_path: Path) -> None:
    figures = _captured_figures(monkeypatch, quant_records(), tmp_path)
    assert sorted(figures) == ["quant_acc_vs_compression.png", "quant_perplexity_vs_compression.png",
                               "quant_tokens_per_s_by_mode.png"]
    for name, fig in figures.items():
        texts = _legend_texts(fig)
        assert not [t for t in texts if "/work" in t or "=" in t or "None" in t or len(t) > 40], (name, texts)
        assert layout_problems(fig) == [], name
    assert [t for t in _legend_texts(figures["quant_tokens_per_s_by_mode.png"]) if t] == [
        "task", "boolq", "hellaswag", "wikitext"]


def test_bars_per_strategy_with_incidental_keys_are_one_series_without_zero_bars(monkeypatch, tmp_path) -> None:
    # Level 2: repeats and head_vocab are set per strategy; they used to split the bars into series with gaps
    records = [bench(f"test_parallel_scaling[cpu-{s}]", "dabench_level2", {"strategy": s, "head_vocab": v,
                                                                          "repeats": n},
                     {"samples_per_s": sps}) for s, v, n, sps in (("dp", 0, 6, 336.0), ("tp", 0, 6, 143.0),
                                                                  ("pp", 8192, 10, 133.0))]
    fig = _captured_figures(monkeypatch, records, tmp_path)["dabench_level2_samples_per_s_by_strategy.png"]
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights == [336.0, 143.0, 133.0] and not fig.legends  # one series: no legend
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == pytest.approx([0, 1, 2])  # centred on the ticks


def test_categories_whose_labels_shorten_alike_keep_every_bar(monkeypatch, tmp_path) -> None:
    """Two strategies whose names agree but in their middle were one category after the 24-character cut: one of
    their bars (900 tokens/s here) was silently not drawn."""
    records = [bench(f"test_ft[{s}]", "finetune", {"strategy": s}, {"tokens_per_s": tps})
               for s, tps in (("deepspeed_zero3_stage_A_offload", 100.0), ("deepspeed_zero3_stage_B_offload", 900.0),
                              ("ddp", 500.0))]
    fig = _captured_figures(monkeypatch, records, tmp_path)["finetune_tokens_per_s_by_strategy.png"]
    (ax,) = fig.axes
    assert sorted(p.get_height() for p in ax.patches) == [100.0, 500.0, 900.0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert len(set(ticks)) == 3 and all(len(t) <= 24 for t in ticks), ticks


def test_a_sweep_never_joins_different_modes_and_lockstep_parameters_are_drawn_once(monkeypatch, tmp_path) -> None:
    rows = [(2, 64, 1, "forward", 160e3), (4, 64, 1, "forward", 84e3), (2, 256, 4, "forward", 12e3),
            (4, 256, 4, "forward", 10e3), (2, 128, 2, "train", 11e3), (2, 512, 8, "train", 800.0)]
    records = [bench(f"test_l1[L{layers}-h{hidden}-{mode}]", "dabench",
                     {"layers": layers, "hidden": hidden, "heads": heads, "mode": mode}, {"tokens_per_s": tps})
               for layers, hidden, heads, mode, tps in rows]
    figures = _captured_figures(monkeypatch, records, tmp_path)
    assert "dabench_tokens_per_s_vs_heads.png" not in figures  # heads = hidden / 64: the hidden plot shows it
    (ax,) = figures["dabench_tokens_per_s_vs_hidden.png"].axes
    assert sorted(line.get_label() for line in ax.get_lines()) == ["2 forward", "2 train", "4 forward"]
    assert ax.get_yscale() == "log"  # 800 to 160,000 tokens/s
    (ax,) = figures["dabench_tokens_per_s_vs_layers.png"].axes
    # the training runs are one point each: no line, and then mode no longer tells the lines apart
    assert sorted(line.get_label() for line in ax.get_lines()) == ["256", "64"]


@pytest.mark.slow
def test_every_plot_of_a_realistic_run_reads_cleanly(monkeypatch, tmp_path: Path) -> None:
    """The suite's CPU reference run (tests/report/realistic_run.json.gz): every plot it gets is checked for
    legends over the data or off the figure, cut text and colliding x ticks, and for legends naming paths/configs."""
    doc = json.loads(gzip.decompress((Path(__file__).parent / "realistic_run.json.gz").read_bytes()))
    figures = _captured_figures(monkeypatch, doc["benchmarks"], tmp_path)
    assert {"roofline_cpu.png", "dabench_tokens_per_s_vs_layers.png", "dabench_level2_samples_per_s_by_strategy.png",
            "quant_acc_vs_compression.png", "finetune_tokens_per_s_by_strategy.png"} <= set(figures)
    for name, fig in figures.items():
        assert layout_problems(fig) == [], name
        texts = _legend_texts(fig)
        assert not [t for t in texts if "/work" in t or "=" in t or "None" in t or len(t) > 60], (name, texts)
    (ax,) = figures["quant_acc_vs_compression.png"].axes
    assert {t.get_text() for t in ax.texts} == {"fp32", "bf16/int8 real = fake"}  # both tasks: fp32 and the plan


def test_the_quality_vs_compression_axis_carries_the_metrics_unit(monkeypatch, tmp_path: Path) -> None:
    """The y axis read "bits_per_byte (lower is better)": the recorded unit (bit/B) was left out."""
    records = []
    for i, mode in enumerate(("fp32", "fake", "real")):
        metrics = {"bits_per_byte": 0.9 + 0.01 * i}
        if mode != "fp32":
            metrics["compression_ratio"] = 3.2
        records.append(bench(f"test_q[{mode}]", "quant", {"mode": mode, "task": "wikitext"}, metrics,
                             units={"bits_per_byte": "bit/B"}))
    figures = _captured_figures(monkeypatch, records, tmp_path)
    (ax,) = figures["quant_bits_per_byte_vs_compression.png"].axes
    assert ax.get_ylabel() == "bits_per_byte [bit/B] (lower is better)"


def _maths_texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if "$" in t.get_text() and t._preprocess_math(t.get_text())[1]]


def test_a_dollar_in_any_name_is_drawn_as_written_never_as_maths(monkeypatch, tmp_path: Path) -> None:
    """matplotlib read `$...$` in a name as mathtext: a malformed one raised (the session's run was lost at its end),
    and `a$b$c` was drawn as maths."""
    odd = "$\\frac$"
    records = [dab(2, 256, 40.0, 90.0, gen=f"gen{odd}"), dab(4, 256, 42.0, 100.0, gen=f"gen{odd}")]
    for strategy, tps in ((f"d{odd}p", 900.0), ("a$b$c", 700.0)):
        for batch in (2, 4):
            records.append(bench(f"test_ft[cpu-{strategy}-{batch}]", "finetune$x",
                                 {"strategy": strategy, "batch_size": batch}, {"tokens_per_s": tps * batch}))
    figures = _captured_figures(monkeypatch, records, tmp_path)
    assert len(figures) >= 3
    for name, fig in figures.items():
        assert _maths_texts(fig) == [], name
    import datetime

    when = [datetime.datetime(2026, 1, d) for d in (1, 2, 3)]
    path = plots.trend_plot({odd: list(zip(when, (1.0, 2.0, 3.0))), "a$b$c": list(zip(when, (2.0, 2.5, 3.0)))},
                            [(f"claim{odd}", 1.0, None)], f"tokens{odd}", "1", tmp_path / "trend.png",
                            [(odd, when[1], 0.5)])
    assert path.read_bytes().startswith(PNG)


def test_a_quality_axis_spanning_a_tiny_range_says_so(monkeypatch, tmp_path: Path) -> None:
    """A perplexity axis from 21.915 to 21.940 made a 0.1% difference look like the whole plot's height."""
    records = []
    for i, mode in enumerate(("fp32", "fake", "real")):
        metrics = {"perplexity": (21.915, 21.925, 21.940)[i]}
        if mode != "fp32":
            metrics["compression_ratio"] = 3.2
        records.append(bench(f"test_q[{mode}]", "quant", {"mode": mode, "task": "wikitext"}, metrics))
    figures = _captured_figures(monkeypatch, records, tmp_path)
    (ax,) = figures["quant_perplexity_vs_compression.png"].axes
    assert ax.get_ylabel().endswith("\naxis not from 0: all values within 0.11% (21.91-21.94)"), ax.get_ylabel()
    assert plots.span_note([0.90, 0.95]) == "" and plots.span_note([-1.0, 1.0]) == "" and plots.span_note([2, 2]) == ""


def test_a_history_spanning_decades_is_drawn_on_a_log_axis(monkeypatch, tmp_path: Path) -> None:
    """900 to 166,000 tokens/s on a linear axis flattened four of eight lines onto the bottom."""
    import datetime

    drawn = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (drawn.append(fig), save(fig, path))[1])
    t = [datetime.datetime(2026, 1, d) for d in (1, 2, 3)]
    plots.trend_plot({"cpu": list(zip(t, [900.0, 950.0, 920.0])), "h200": list(zip(t, [160e3, 166e3, 150e3]))},
                     [("A.x", 1000.0, None), ("A.y", 0.0, 500.0)], "tokens_per_s", "tokens/s", tmp_path / "a.png")
    plots.trend_plot({"cpu": list(zip(t, [900.0, 950.0, 920.0]))}, [], "tokens_per_s", "tokens/s", tmp_path / "b.png")
    wide, narrow = (fig.axes[0] for fig in drawn)
    assert wide.get_yscale() == "log" and wide.get_ylim()[0] < 900 and wide.get_ylim()[1] > 166e3
    assert wide.get_ylabel() == "tokens_per_s [tokens/s] (log scale)"
    assert narrow.get_yscale() == "linear"


def test_a_cpu_roof_says_how_many_threads_it_was_measured_on() -> None:
    """The roof read 0.16 TFLOP/s (one thread) while `pytest-genai devices` said 0.312 (two cores), with no word why."""
    recs = run_from_json(run_doc([bench("test_l1[cpu-L2]", "dabench", {"layers": 2, "dtype": "fp32"},
                                        {"arithmetic_intensity_modeled": 8.7, "achieved_tflops": 0.036,
                                         "ceiling_tflops_measured": 0.088, "ceiling_gbs_measured": 20.9},
                                        model=None, labels={"bound": "compute", "cpu_threads": "1"})]), "x").records
    fig = roofline_figure(recs, "t")
    (roof,) = [t.get_text() for t in fig.legends[0].get_texts() if t.get_text().startswith("measured roof")]
    assert "measured on 1 CPU thread (as the benchmarks ran)" in roof and "uses every core" in roof, roof
    assert all(len(line) <= 60 for line in roof.splitlines()), roof
    gpu = roofline_figure(run_from_json(run_doc([dab(2, 256, 40.0, 90.0, ceiling_tflops_measured=700.0,
                                                     ceiling_gbs_measured=2800.0)]), "x").records, "t")
    assert not [t for t in gpu.legends[0].get_texts() if "thread" in t.get_text()]


def test_log_axes_are_labelled_in_plain_numbers(tmp_path: Path) -> None:
    """With mathtext off, a log axis' labels were drawn as `$\\mathdefault{10^{2}}$`."""
    fig = roofline_figure(run_from_json(run_doc([dab(2, 256, 40.0, 90.0), dab(2, 2048, 400.0, 600.0)]), "x").records,
                          "t")
    plots._save(fig, tmp_path / "r.png")
    (ax,) = fig.axes
    texts = [t.get_text() for axis in (ax.xaxis, ax.yaxis) for t in axis.get_ticklabels(which="both")]
    assert [t for t in texts if t] and not [t for t in texts if "$" in t or "mathdefault" in t], texts


def test_a_sweep_axis_spanning_a_tiny_range_says_so(monkeypatch, tmp_path: Path) -> None:
    records = [bench(f"test_s[L{k}]", "dabench", {"layers": k}, {"tokens_per_s": 1000.0 + k}, model=None)
               for k in (2, 4, 8)]
    figures = _captured_figures(monkeypatch, records, tmp_path)
    (ax,) = figures["dabench_tokens_per_s_vs_layers.png"].axes
    assert ax.get_ylabel().endswith("\naxis not from 0: all values within 0.60% (1002-1008)"), ax.get_ylabel()
