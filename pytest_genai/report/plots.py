"""PNG plots of a run: roofline, sweep (scaling / batch-size) curves, throughput per strategy
(or dtype, attention...), quality vs compression ratio with the Pareto front.

Which plots are drawn follows from what the records hold (metric names of the JSON
contract, config parameters that vary), so a run with only quantization benchmarks gets
only the Pareto plots.  matplotlib is imported lazily and used through its object API
with the Agg canvas (no pyplot global state, no display needed).
"""

from __future__ import annotations

import io
import math
import re
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pytest_genai.atomic import write_bytes_atomic
from .errors import ReportInputError
from .pareto import pareto_front
from .registry import THROUGHPUT_METRICS, MetricInfo, default_metric_info
from .roofline import ceiling_polyline, ridge_point
from .runs import Record, records_from_benchmarks

CATEGORY_PARAMS = ("strategy", "parallelism", "dtype", "precision", "mode", "attention", "flash_attention")
"""Categorical config parameters that get a grouped bar chart of throughput (DDP vs FSDP, fp32 vs bf16...)."""
QUALITY_METRICS = ("perplexity", "word_perplexity", "bits_per_byte", "ppl_ratio", "acc", "acc_norm")
"""Quality metrics plotted against ``compression_ratio``."""
_QUALITY_DIRECTIONS = {"perplexity": "lower", "word_perplexity": "lower", "bits_per_byte": "lower",
                       "ppl_ratio": "lower", "acc": "higher", "acc_norm": "higher"}
_DTYPE_ALIASES = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
                  "tf32": "tf32", "fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8"}


class PlotsUnavailable(ImportError):
    """matplotlib is missing; the message says how to install it."""


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotsUnavailable(
            f"plots need matplotlib, which is not importable ({exc}); install it with: pip install 'pytest-genai[plot]'"
        ) from None
    return Figure, FigureCanvasAgg


def _new_figure(size: tuple[float, float] = (7.0, 4.8)) -> Any:
    Figure, FigureCanvasAgg = _matplotlib()
    fig = Figure(figsize=size, dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return write_bytes_atomic(path, buf.getvalue())


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(p for p in parts if p)).strip("-") or "plot"


def _parse(records: Iterable[Any]) -> list[Record]:
    out: list[Record] = []
    for rec in records:
        if isinstance(rec, Record):
            out.append(rec)
            continue
        try:
            out.extend(records_from_benchmarks([rec], "plots"))
        except ReportInputError as exc:
            warnings.warn(f"pytest-genai plots: skipped a benchmark: {exc}", stacklevel=3)
    return [r for r in out if r.experiment is not None]


def write_plots(records: Iterable[Any], outdir: str | Path, info: Mapping[str, MetricInfo] | None = None) -> list[Path]:
    """Write every plot the records support into ``outdir``; returns the PNG paths written.

    ``records`` are pytest-benchmark "benchmarks" entries (dicts with ``name``, ``fullname`` and
    ``extra_info["genai"]``) or :class:`~.runs.Record` objects.  Raises :class:`PlotsUnavailable`
    when matplotlib is missing.
    """
    _matplotlib()
    recs = _parse(records)
    if info is None:
        info = default_metric_info()[0]
    out = Path(outdir)
    paths: list[Path] = []
    paths += roofline_plots(recs, out)
    paths += sweep_plots(recs, out)
    paths += category_plots(recs, out)
    paths += pareto_plots(recs, out, info)
    return paths


# --- roofline ---------------------------------------------------------------------------------

def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def roofline_ceilings(recs: Sequence[Record]) -> list[tuple[str, float, float]]:
    """Distinct (label, peak TFLOP/s, bandwidth GB/s) roofs of one device's records, measured then spec.

    The spec roof comes from the records (``ceiling_*_spec``), or, when none recorded it, from
    ``pytest_genai.devices.specs.get_spec`` for the device generation and the config's dtype.
    """
    roofs: dict[tuple[str, float, float], None] = {}
    for kind in ("measured", "spec"):
        for r in recs:
            t, g = r.metrics.get(f"ceiling_tflops_{kind}"), r.metrics.get(f"ceiling_gbs_{kind}")
            if _finite(t) and _finite(g):
                roofs.setdefault((kind, float(t), float(g)), None)
    if not any(k == "spec" for k, _, _ in roofs) and recs and recs[0].device is not None:
        for r in recs:
            spec_roof = _spec_roof(r)
            if spec_roof is not None:
                roofs.setdefault(("spec", *spec_roof), None)
    return list(roofs)


def _spec_roof(r: Record) -> tuple[float, float] | None:
    dtype = _DTYPE_ALIASES.get(str(r.config.get("dtype", "fp32")).replace("torch.", "").lower())
    if dtype is None or r.device is None:
        return None
    try:
        from pytest_genai.devices.specs import get_spec

        spec = get_spec(r.device.generation)
    except (ImportError, ValueError, KeyError):
        return None
    peak, bw = spec.peak_tflops(dtype), spec.mem_bandwidth_gbs
    return (float(peak), float(bw)) if _finite(peak) and _finite(bw) else None


def roofline_figure(recs: Sequence[Record], title: str) -> Any:
    """Achieved TFLOP/s against arithmetic intensity, over the device's roofs (log-log)."""
    fig = _new_figure()
    ax = fig.add_subplot()
    pts = [(r.metrics["arithmetic_intensity"], r.metrics["achieved_tflops"], r.labels.get("bound", "")) for r in recs]
    pts = [(x, y, b) for x, y, b in pts if _finite(x) and _finite(y)]
    roofs = roofline_ceilings(recs)
    xs = [p[0] for p in pts] + [ridge_point(t, g) for _, t, g in roofs]
    x_min, x_max = (min(xs) / 4, max(xs) * 4) if xs else (0.1, 1000.0)
    styles = {"measured": "-", "spec": "--"}
    for kind, peak, bw in roofs:
        rx, ry = ceiling_polyline(peak, bw, x_min, x_max)
        ridge = ridge_point(peak, bw)
        (line,) = ax.plot(rx, ry, styles[kind], color="black" if kind == "spec" else "tab:gray", linewidth=1.4,
                          label=f"{kind} roof: {peak:.3g} TFLOP/s, {bw:.4g} GB/s (ridge {ridge:.3g} FLOP/B)")
        line.set_gid(f"roof-{kind}")
        ax.axvline(ridge, color=line.get_color(), linestyle=":", linewidth=0.8)
    colors = {"compute": "tab:red", "memory": "tab:blue"}
    for bound in sorted({b for _, _, b in pts}):
        sel = [(x, y) for x, y, b in pts if b == bound]
        ax.scatter([x for x, _ in sel], [y for _, y in sel], s=28, zorder=3, color=colors.get(bound, "tab:green"),
                   label=f"{bound}-bound configs" if bound else "configs")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("achieved [TFLOP/s]")
    ax.set_title(title)
    ax.grid(True, which="both", linewidth=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower right")
    return fig


def roofline_plots(recs: Sequence[Record], outdir: Path) -> list[Path]:
    by_device: dict[str, list[Record]] = {}
    for r in recs:
        points = (r.metrics.get("arithmetic_intensity"), r.metrics.get("achieved_tflops"))
        if all(_finite(v) for v in points) and r.device is not None:
            by_device.setdefault(r.device.generation, []).append(r)
    paths = []
    for gen, group in by_device.items():
        fig = roofline_figure(group, f"Roofline — {gen} ({len(group)} configs)")
        paths.append(_save(fig, outdir / f"{_slug('roofline', gen)}.png"))
    return paths


# --- sweeps and strategies --------------------------------------------------------------------

def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _by_experiment(recs: Sequence[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in recs:
        out.setdefault(r.experiment or "", []).append(r)
    return out


def _throughput_metric(recs: Sequence[Record]) -> str | None:
    return next((m for m in THROUGHPUT_METRICS if any(m in r.metrics for r in recs)), None)


def _varying(recs: Sequence[Record]) -> list[str]:
    """Config parameters that differ between records; ``id`` (derived from the others) is left out."""
    keys: list[str] = []
    for r in recs:
        keys += [k for k in r.config if k not in keys and k != "id"]
    return [k for k in keys if len({repr(r.config.get(k)) for r in recs}) > 1]


def _series_label(r: Record, params: Sequence[str]) -> str:
    parts = [f"{p}={r.config.get(p)}" for p in params]
    gens = r.device.generation if r.device else ""
    return ", ".join([gens] + parts) if parts else gens


def sweep_plots(recs: Sequence[Record], outdir: Path) -> list[Path]:
    """Throughput against each numeric config parameter that varies (scaling, batch size, layers...)."""
    paths = []
    for exp, group in _by_experiment(recs).items():
        metric = _throughput_metric(group)
        if metric is None:
            continue
        varying = _varying(group)
        for param in varying:
            rows = [r for r in group if metric in r.metrics and _numeric(r.config.get(param))]
            if len({r.config[param] for r in rows}) < 2:
                continue
            others = [p for p in varying if p != param]
            series: dict[str, list[tuple[float, float]]] = {}
            for r in rows:
                series.setdefault(_series_label(r, others), []).append((r.config[param], r.metrics[metric]))
            series = {k: sorted(v) for k, v in series.items() if len(v) >= 2}
            if not series:
                continue
            fig = _new_figure()
            ax = fig.add_subplot()
            for label, pts in sorted(series.items()):
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=label)
            ax.set_xlabel(param)
            ax.set_ylabel(metric)
            ax.set_title(f"{exp}: {metric} vs {param}")
            ax.grid(True, linewidth=0.3)
            if len(series) <= 12:
                ax.legend(fontsize=7)
            paths.append(_save(fig, outdir / f"{_slug(exp, metric, 'vs', param)}.png"))
    return paths


def category_plots(recs: Sequence[Record], outdir: Path) -> list[Path]:
    """Grouped bars of throughput per value of a categorical parameter (strategy, dtype, attention...)."""
    paths = []
    for exp, group in _by_experiment(recs).items():
        metric = _throughput_metric(group)
        if metric is None:
            continue
        for param in CATEGORY_PARAMS:
            rows = [r for r in group if metric in r.metrics and param in r.config]
            values = list(dict.fromkeys(str(r.config[param]) for r in rows))
            if len(values) >= 2:
                fig = _bars(rows, param, values, metric, f"{exp}: {metric} per {param}")
                paths.append(_save(fig, outdir / f"{_slug(exp, metric, 'by', param)}.png"))
    return paths


def _bars(rows: Sequence[Record], param: str, values: Sequence[str], metric: str, title: str) -> Any:
    others = [p for p in _varying(rows) if p != param]
    groups = list(dict.fromkeys(_series_label(r, others) for r in rows))
    fig = _new_figure()
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(groups))
    for gi, glabel in enumerate(groups):
        heights = []
        for v in values:
            found = [r.metrics[metric] for r in rows if str(r.config[param]) == v and _series_label(r, others) == glabel]
            heights.append(found[0] if found else 0.0)
        ax.bar([i + gi * width for i in range(len(values))], heights, width=width, label=glabel)
    ax.set_xticks([i + width * (len(groups) - 1) / 2 for i in range(len(values))], values)
    ax.set_ylabel(metric)
    ax.set_title(title)
    if len(groups) <= 12:
        ax.legend(fontsize=7)
    return fig


# --- quality vs compression -------------------------------------------------------------------

def _direction(metric: str, info: Mapping[str, MetricInfo]) -> str | None:
    d = info[metric].direction if metric in info else _QUALITY_DIRECTIONS.get(metric)
    return d if d in ("higher", "lower") else None


def pareto_figure(points: Mapping[str, list[tuple[float, float, str]]], metric: str, direction: str, title: str) -> Any:
    """Quality metric against compression ratio per series, the Pareto front of each drawn as a step line."""
    fig = _new_figure()
    ax = fig.add_subplot()
    for label, pts in sorted(points.items()):
        xy = [(x, y) for x, y, _ in pts]
        sc = ax.scatter([x for x, _ in xy], [y for _, y in xy], s=26, alpha=0.6, label=label)
        front = pareto_front(xy, maximize_x=True, maximize_y=direction == "higher")
        fx, fy = [xy[i][0] for i in front], [xy[i][1] for i in front]
        (line,) = ax.plot(fx, fy, drawstyle="steps-post", color=sc.get_facecolor()[0], linewidth=1.4,
                          marker="D", markersize=6, label=f"{label}: Pareto front")
        line.set_gid(f"pareto-{label}")
        for i in front:
            ax.annotate(pts[i][2], xy[i], fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("compression ratio [x] (higher is better)")
    ax.set_ylabel(f"{metric} ({direction} is better)")
    ax.set_title(title)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7)
    return fig


def pareto_plots(recs: Sequence[Record], outdir: Path, info: Mapping[str, MetricInfo]) -> list[Path]:
    paths = []
    for exp, group in _by_experiment(recs).items():
        rows = [r for r in group if _finite(r.metrics.get("compression_ratio"))]
        varying = _varying(rows)
        for metric in QUALITY_METRICS:
            direction = _direction(metric, info)
            sel = [r for r in rows if metric in r.metrics and math.isfinite(r.metrics[metric])]
            if direction is None or len(sel) < 2:
                continue
            series: dict[str, list[tuple[float, float, str]]] = {}
            for r in sel:
                label = ", ".join(x for x in ((r.device.generation if r.device else ""), r.model or "") if x)
                point_label = " ".join(str(r.config[p]) for p in varying if p in r.config) or r.name
                series.setdefault(label, []).append((r.metrics["compression_ratio"], r.metrics[metric], point_label))
            fig = pareto_figure(series, metric, direction, f"{exp}: {metric} vs compression ratio")
            paths.append(_save(fig, outdir / f"{_slug(exp, metric, 'vs', 'compression')}.png"))
    return paths
