"""Plots: each kind is written as a real PNG, and the roofline's ridge sits where the device spec puts it."""
from pathlib import Path

import pytest

from pytest_genai.devices.specs import get_spec
from pytest_genai.report.plots import roofline_figure, write_plots
from pytest_genai.report.registry import metric_info_from
from pytest_genai.report.runs import run_from_json
from pytest_genai.claims import load_metrics

from .runfiles import bench, run_doc

pytest.importorskip("matplotlib")
PNG = b"\x89PNG\r\n\x1a\n"


def dab(layers: int, hidden: int, ai: float, tflops: float, gen: str = "h100-sxm", **extra):
    metrics = {"arithmetic_intensity": ai, "achieved_tflops": tflops, "tokens_per_s": tflops * 1e3, **extra}
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
    paths = write_plots(records(), tmp_path / "plots", info)
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
    assert write_plots([bench("t", metrics={"acc": 0.5})], tmp_path, {}) == []
