"""PNG plots of what a run's records hold: roofline, sweeps, bars per category, quality vs compression, trend."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import textwrap
from collections import Counter
from contextlib import suppress
from itertools import chain
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from pytest_genai.atomic import write_bytes_atomic
from pytest_genai.devices.specs import get_spec, ridge_point
from .output import NameAllocator, file_stem
from .pareto import pareto_front
from pytest_genai.results.registry import QUALITY_METRICS, THROUGHPUT_METRICS, MetricInfo
from pytest_genai.claims import default_metric_info
from .roofline import ceiling_polyline
from pytest_genai.results.runs import Record, config_value_label
from pytest_genai.tables import format_number, format_value, shorten_unique
from .views import distinguishing_keys, group_by, value_key, with_unit

# categorical config parameters that get a grouped bar chart of throughput (DDP vs FSDP, fp32 vs bf16...)
CATEGORY_PARAMS = ("strategy", "parallelism", "dtype", "precision", "mode", "attention", "flash_attention")
_QUALITY_DIRECTIONS = {"perplexity": "lower", "word_perplexity": "lower", "bits_per_byte": "lower",
                       "ppl_ratio": "lower", "acc": "higher", "acc_norm": "higher"}
# torch's dtype names as the spec sheet's (:data:`.devices.specs.DTYPES`; any other name has no spec roof)
_DTYPE_ALIASES = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
# keys tried first when a plot needs series: the ones a reader expects a line or a bar colour to stand for
SERIES_PREFERENCE = ("task", "model", "device") + CATEGORY_PARAMS + ("world_size", "batch_size", "layers", "hidden")
# keys that name a precision plan: a point of the quality-vs-compression plot
PLAN_KEYS = ("precision", "mode", "tiers", "backend", "plan", "bits", "sensitive_fraction", "group_size", "dtype")
MAX_VALUE_CHARS = 24  # a config value as a legend or tick label: cut shorter than a table's
NARROW_SPAN = 0.01  # values this close fill a linear axis not from 0: its label says so (:func:`span_note`)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
SERIES_KEYS = ("device", "model", "task")  # what a quality-vs-compression series stands for (those that vary)
POINT_LABEL_CHARS = 40  # a longer point label names its first plan and a count (the legend's markers tell them apart)
TREND_LOG_SPAN = 10  # a history of positive values spanning more than this factor is drawn on a log axis
LEGEND_ROWS = 18  # entries per column of the trend plot's legend: what fits its height in small font


class PlotsUnavailable(ImportError):
    """matplotlib is missing; the message says how to install it."""


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotsUnavailable(f"plots need matplotlib, which is not importable ({exc}); "
                               "install it with: pip install 'pytest-genai[plot]'") from None
    return Figure, FigureCanvasAgg


def _literal_text(fn: Any) -> Any:
    """Run ``fn`` with matplotlib's mathtext off, so a ``$`` in a name is drawn as written."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _matplotlib()  # PlotsUnavailable, with its install hint, when matplotlib is missing
        from matplotlib import rc_context
        with rc_context({"text.parse_math": False}):
            return fn(*args, **kwargs)
    return wrapper


def _new_figure(size: tuple[float, float] = (7.0, 4.8)) -> Any:
    Figure, FigureCanvasAgg = _matplotlib()
    FigureCanvasAgg(fig := Figure(figsize=size, dpi=110, layout="constrained"))
    return fig


def _finish(ax: Any, xlabel: str, ylabel: str, title: str, **grid: Any) -> None:
    """Axis labels, a grid and the title; a long title (one naming the test) gets a smaller font, to fit the axes."""
    ax.set(xlabel=xlabel, ylabel=ylabel)
    longest = max((len(line) for line in title.splitlines()), default=0)
    ax.set_title(title, fontsize=11.0 if longest <= 48 else 9.0 if longest <= 64 else 8.0)
    ax.grid(True, **grid)


def _legend(fig: Any, ax: Any, n: int = 2, **style: Any) -> None:
    """Beside the axes (or where ``style`` says), never over the data; none for a single series."""
    if (entries := ax.get_legend_handles_labels())[0] and n > 1:
        fig.legend(*entries, **{"fontsize": 7, "loc": "outside right upper", **style})


@_literal_text
def _save(fig: Any, path: Path) -> Path:
    from matplotlib.ticker import LogFormatter, LogFormatterMathtext

    class PlainLog(LogFormatter):
        def __call__(self, x: float, pos: Any = None) -> str:
            return f"{x:g}" if super().__call__(x, pos) else ""

    # log axes labelled in plain text (``0.06``, ``100``), not the mathtext :func:`_literal_text` turns off
    for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):
        for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                         (axis.get_minor_formatter, axis.set_minor_formatter)):
            if isinstance(current := get(), LogFormatterMathtext):
                put(PlainLog(base=getattr(current, "_base", 10.0), labelOnlyBase=current.labelOnlyBase,
                             minor_thresholds=current.minor_thresholds))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    try:
        return write_bytes_atomic(path, buf.getvalue())
    except OSError as exc:  # name the plot's path (a full disk named nothing), never the writer's temp file
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


@_literal_text
def write_plots(records: Iterable[Record], outdir: str | Path, info: Mapping[str, MetricInfo] | None = None,
                reserved: Iterable[str] = ()) -> list[Path]:
    """Write every plot the records support into ``outdir``, none named as in ``reserved``; returns their paths."""
    recs, out, taken = [r for r in records if r.experiment is not None], Path(outdir), NameAllocator(reserved)
    info = default_metric_info()[0] if info is None else info
    figures = chain(_sweeps(recs), _categories(recs), _quality(recs, info))  # each saved before the next is drawn
    return [*roofline_plots(recs, out, taken), *(_save(fig, _path(out, taken, *name)) for fig, *name in figures)]


# --- roofline ---------------------------------------------------------------------------------
def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(x: Any, positive: bool = True) -> bool:
    """A finite number, by default a positive one: a value a log axis can show."""
    return _numeric(x) and math.isfinite(x) and (x > 0 or not positive)


def roofline_ceilings(recs: Sequence[Record]) -> list[tuple[str, float, float]]:
    """Distinct (kind, TFLOP/s, GB/s) roofs of one device's records: measured, then spec (else the spec sheet's)."""
    roofs = [(kind, r.metrics.get(f"ceiling_tflops_{kind}"), r.metrics.get(f"ceiling_gbs_{kind}"))
             for kind in ("measured", "spec") for r in recs]
    if not any(k == "spec" and _finite(t) and _finite(g) for k, t, g in roofs) and recs and recs[0].device is not None:
        for r in (r for r in recs if r.device is not None):
            dtype = str(r.config.get("dtype", "fp32")).replace("torch.", "").lower()
            with suppress(ImportError, ValueError, KeyError):  # no spec for the device or its dtype: no roof
                spec = get_spec(r.device.generation)
                roofs.append(("spec", spec.peak_tflops(_DTYPE_ALIASES.get(dtype, dtype)), spec.mem_bandwidth_gbs))
    return list(dict.fromkeys((k, float(t), float(g)) for k, t, g in roofs if _finite(t) and _finite(g)))


@_literal_text
def roofline_figure(recs: Sequence[Record], title: str) -> Any:
    """Achieved TFLOP/s against arithmetic intensity, over the device's roofs (log-log)."""
    ax = (fig := _new_figure()).add_subplot()
    pts = [(x, y, r.labels.get("bound", "")) for r in recs
           if _finite(x := r.metrics["arithmetic_intensity_modeled"]) and _finite(y := r.metrics["achieved_tflops"])]
    roofs = roofline_ceilings(recs)
    xs = [p[0] for p in pts] + [ridge_point(t * 1e12, g * 1e9) for _, t, g in roofs]
    x_min, x_max = (min(xs) / 4, max(xs) * 4) if xs else (0.1, 1000.0)
    # why a CPU's measured roof (on the benchmarks' cpu_threads) is lower than `pytest-genai devices`'s: two legend
    # lines of at most 60 characters (a longer one is cut off the figure)
    threads = sorted({r.labels["cpu_threads"] for r in recs
                      if r.device is not None and r.device.kind == "cpu" and r.labels.get("cpu_threads")}, key=str)
    cpu_note = (f"\nmeasured on {'/'.join(threads)} CPU thread{'' if threads == ['1'] else 's'} (as the benchmarks "
                "ran);\n`pytest-genai devices` uses every core: it reads higher") if threads else ""
    for kind, peak, bw in roofs:
        ridge = ridge_point(peak * 1e12, bw * 1e9)
        (line,) = ax.plot(*ceiling_polyline(peak, bw, x_min, x_max), "--" if kind == "spec" else "-",
                          color="black" if kind == "spec" else "tab:gray", linewidth=1.4,
                          label=f"{kind} roof: {peak:.3g} TFLOP/s, {bw:.3g} GB/s (ridge {ridge:.3g} FLOP/B)"
                          + (cpu_note if kind == "measured" else ""))
        line.set_gid(f"roof-{kind}")
        ax.axvline(ridge, color=line.get_color(), linestyle=":", linewidth=0.8)
    colors = {"compute": "tab:red", "memory": "tab:blue"}
    for bound in sorted({b for _, _, b in pts}):
        ax.scatter(*zip(*[(x, y) for x, y, b in pts if b == bound]), s=28, zorder=3,
                   color=colors.get(bound, "tab:green"), label=f"{bound}-bound configs" if bound else "configs")
    ax.set(xscale="log", yscale="log")
    _finish(ax, "arithmetic intensity, modeled (minimal traffic) [FLOP/byte]", "achieved [TFLOP/s]", title,
            which="both", linewidth=0.3)
    _legend(fig, ax, loc="outside lower center", ncols=1)  # below the axes: never over a point
    return fig


@_literal_text
def roofline_plots(recs: Sequence[Record], outdir: Path, taken: NameAllocator | None = None) -> list[Path]:
    taken = NameAllocator() if taken is None else taken
    by_device = group_by((r for r in recs if r.device is not None and _finite(r.metrics.get("achieved_tflops"))
                          and _finite(r.metrics.get("arithmetic_intensity_modeled"))), lambda r: r.device.generation)
    return [_save(roofline_figure(group, _titled(f"Roofline — {gen} ({len(group)} configs)", group)),
                  outdir / taken.take(file_stem("roofline", gen))) for gen, group in by_device.items()]


# --- what tells records apart: series and point labels ---------------------------------------------------------
def _facts(r: Record) -> dict[str, Any]:
    """What a plot may tell records apart by: device, model and the config (less its derived ``id``)."""
    out: dict[str, Any] = {"device": r.device.generation if r.device else None, "model": r.model_label}
    out.update((k, r.model_label if k == "model" and v == r.model else config_value_label(k, v))
               for k, v in r.config.items() if k != "id")
    return out


def _varies(rows: Sequence[Record], key: str, facts: Any = _facts) -> bool:
    return len({repr(facts(r).get(key)) for r in rows}) > 1


def _keys(rows: Sequence[Record], fixed: Sequence[str] = (), prefer: Sequence[str] = ()) -> list[str]:
    """The fewest keys that tell ``rows`` apart beside ``fixed`` (:func:`.views.distinguishing_keys`)."""
    return distinguishing_keys(rows, _facts, fixed, [*prefer, *SERIES_PREFERENCE])


def _label(r: Record, keys: Sequence[str]) -> str:
    facts = _facts(r)
    # "—": the record has no such key; the model label is never cut (its "(tiny random)" is what it must say)
    values = [(str(facts[k]) if k == "model" else format_value(facts[k], MAX_VALUE_CHARS)) if k in facts else "—"
              for k in keys]
    return " ".join(dict.fromkeys(values))  # "fp32 fp32" reads "fp32"


def _series(rows: Sequence[Record], keys: Sequence[str]) -> dict[str, list[Record]]:
    """Records by their label on ``keys``, labels ordered by their last record's values (numbers first)."""
    return dict(sorted(group_by(rows, lambda r: _label(r, keys)).items(), key=lambda kv: tuple(
        (0, v, "") if _numeric(v) else (1, 0, str(v)) for v in map(_facts(kv[1][-1]).get, keys))))


def plot_context(recs: Sequence[Record]) -> str:
    """For a title's second line: the devices and the models (their scale, "random weights") the points ran on."""
    def few(items: list[str]) -> str:
        items = list(dict.fromkeys(i for i in items if i))
        return ", ".join(items[:3]) + (f" +{len(items) - 3} more" if len(items) > 3 else "") if items else "—"

    devices = few([f"{r.device.name} ({r.device.generation})" if r.device.name and r.device.name != r.device.generation
                   else r.device.generation for r in recs if r.device is not None])
    # models that share scale and weights are named once: "a, b (tiny, random weights)"
    by_notes = group_by(recs, lambda r: ", ".join([str(r.config.get("scale"))] * bool(r.config.get("scale"))
                                                  + ["random weights"] * (r.config.get("weights") == "random")))
    models = "; ".join(few([r.model or "" for r in group]) + (f" ({notes})" if notes else "")
                       for notes, group in by_notes.items())
    return f"on {devices} · {'models' if ',' in models or ';' in models else 'model'} {models}"


def _titled(title: str, recs: Sequence[Record]) -> str:
    """The title, then what ran, wrapped to fit an axes that shares the figure with a legend."""
    return "\n".join([title, *textwrap.wrap(plot_context(recs), 48)])


# --- sweeps and strategies --------------------------------------------------------------------
def _by_test(recs: Sequence[Record]) -> list[tuple[str, str, list[Record]]]:
    """``(experiment, title, records)`` per test function (never two in a plot); the title names a test of several."""
    groups = group_by(recs, lambda r: (r.experiment or "", r.name.split("[", 1)[0]))
    tests_per_experiment = Counter(exp for exp, _ in groups)
    return [(exp, f"{exp} ({test.removeprefix('test_')})" if tests_per_experiment[exp] > 1 else exp, rows)
            for (exp, test), rows in groups.items()]


def _path(outdir: Path, taken: NameAllocator, exp: str, title: str, *parts: str) -> Path:
    """``<experiment>_<parts>.png``; the test's name where another test took that name, then a number."""
    stem = file_stem(exp, *parts)
    return outdir / taken.take(file_stem(title, *parts) if f"{stem}.png" in taken else stem)


def _throughput_tests(recs: Sequence[Record]) -> Iterable[tuple[str, str, list[Record], str]]:
    """:func:`_by_test`'s groups that have a throughput metric, with the first one they have."""
    for exp, title, group in _by_test(recs):
        metric = next((m for m in THROUGHPUT_METRICS if any(m in r.metrics for r in group)), None)
        if metric is not None:
            yield exp, title, group, metric


def _unit(metric: str, rows: Sequence[Record]) -> str:
    return next((r.units[metric] for r in rows if r.units.get(metric)), "")


def _y_axis(ax: Any, values: Sequence[float], log: bool = True) -> None:
    """A log axis (where ``log``) for values spanning over 20x (model sizes), else thousands separators from 10,000."""
    positive = [v for v in values if _finite(v)]
    if log and positive and len(positive) == len(values) and max(positive) / min(positive) > 20:
        ax.set_yscale("log")
    elif positive and max(positive) >= 10_000:
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")


def span_note(values: Sequence[float]) -> str:
    """``"\naxis not from 0: all values within 0.11% (21.92-21.94)"`` for values of one sign within NARROW_SPAN."""
    finite = [float(v) for v in values if _finite(v, positive=False)]
    lo, hi = min(finite, default=0.0), max(finite, default=0.0)
    size = max(abs(lo), abs(hi))
    if hi <= lo or lo * hi <= 0 or (hi - lo) / size >= NARROW_SPAN:
        return ""
    return f"\naxis not from 0: all values within {(hi - lo) / size:.2%} ({format_number(lo)}-{format_number(hi)})"


def _sweeps(recs: Sequence[Record]) -> Iterator[tuple[Any, str, str, str, str, str]]:
    """Throughput against each numeric parameter that varies (not one in lockstep with one drawn), a line per series."""
    for exp, title, group, metric in _throughput_tests(recs):
        drawn: list[str] = []
        for param in [k for k in dict.fromkeys(k for r in group for k in r.config if k != "id")
                      if _varies(group, k, lambda r: r.config)]:
            rows = [r for r in group if metric in r.metrics and _numeric(r.config.get(param))]
            if len({r.config[param] for r in rows}) < 2 or any(_one_to_one(rows, param, d) for d in drawn):
                continue
            keys = _line_keys(rows, param)
            rows = [r for line in group_by(rows, lambda r: _label(r, keys)).values() if len(line) >= 2 for r in line]
            if not rows:  # a one-point line shows no sweep
                continue
            keys = _line_keys(rows, param)  # what still varies among the lines drawn
            drawn.append(param)
            ax = (fig := _new_figure()).add_subplot()
            for label, line in (lines := _series(rows, keys)).items():
                ax.plot(*zip(*sorted((r.config[param], r.metrics[metric]) for r in line)), marker="o",
                        label=label or metric)
            xs = sorted({r.config[param] for r in rows})
            if xs[0] > 0 and xs[-1] / xs[0] >= 8:  # sizes that double: equal steps on a log2 axis
                ax.set_xscale("log", base=2)
            if len(xs) <= 12:
                ax.set_xticks(xs, [format_value(x, MAX_VALUE_CHARS) for x in xs])
                ax.minorticks_off()
            _y_axis(ax, [r.metrics[metric] for r in rows])
            note = span_note([r.metrics[metric] for r in rows]) if ax.get_yscale() == "linear" else ""
            _finish(ax, param, with_unit(metric, _unit(metric, rows)) + note,
                    _titled(f"{title}: {metric} vs {param}", rows), linewidth=0.3)
            _legend(fig, ax, len(lines), title=" / ".join(keys), title_fontsize=7)
            yield fig, exp, title, metric, "vs", param


def _line_keys(rows: Sequence[Record], x: str) -> list[str]:
    """What a sweep's line stands for: what tells one x's points apart, and every text key that varies (the mode)."""
    keys = _keys(rows, fixed=[x])
    return keys + [k for k in dict.fromkeys(k for r in rows for k in _facts(r)) if k != x and k not in keys
                   and any(isinstance(_facts(r).get(k), str) for r in rows) and _varies(rows, k)]


def _one_to_one(rows: Sequence[Record], a: str, b: str) -> bool:
    pairs = {(repr(r.config.get(a)), repr(r.config.get(b))) for r in rows}
    return len(pairs) == len({p for p, _ in pairs}) == len({q for _, q in pairs})


def _categories(recs: Sequence[Record]) -> Iterator[tuple[Any, str, str, str, str, str]]:
    """Bars of throughput per value of a categorical parameter, a colour per series; drawn where a series has two."""
    for exp, title, group, metric in _throughput_tests(recs):
        for param in CATEGORY_PARAMS:
            rows = [r for r in group if metric in r.metrics and param in r.config]
            values = list(dict.fromkeys(value_key(r.config[param]) for r in rows))  # full: two values never merge
            if len(values) < 2:
                continue
            series = _series(rows, keys := _keys(rows, fixed=[param]))
            if not any(len({value_key(r.config[param]) for r in s}) >= 2 for s in series.values()):
                continue
            ax = (fig := _new_figure()).add_subplot()
            width = 0.8 / len(series)
            at: dict[str, list[tuple[float, float]]] = {g: [] for g in series}
            for i, v in enumerate(values):
                present = [(g, found[0]) for g, s in series.items()  # a missing combination is no bar, not a zero
                           if (found := [r.metrics[metric] for r in s if value_key(r.config[param]) == v])]
                for k, (g, height) in enumerate(present):  # the bars of one category centred on its tick
                    at[g].append((i + (k - (len(present) - 1) / 2) * width, height))
            for n, (g, bars) in enumerate(at.items()):
                drawn = ax.bar([x for x, _ in bars], [h for _, h in bars], width=width * 0.95, color=f"C{n % 10}",
                               label=g or metric)
                ax.bar_label(drawn, [format_number(h) for _, h in bars], fontsize=6 if len(series) > 2 else 7,
                             padding=2, rotation=90 if len(series) > 3 else 0)
            # tick texts as short as legends, but never two alike for different values (a bar would seem to be missing)
            ticks = shorten_unique([format_value(json.loads(v), 10_000) for v in values], MAX_VALUE_CHARS)
            long_ticks = len(ticks) > 4 and max(len(t) for t in ticks) > 8
            ax.set_xticks(range(len(ticks)), ticks, rotation=30 if long_ticks else 0,
                          ha="right" if long_ticks else "center")
            _y_axis(ax, [r.metrics[metric] for r in rows], log=False)
            ax.margins(y=0.2 if len(series) > 3 else 0.12)  # room for the value labels
            _finish(ax, param, with_unit(metric, _unit(metric, rows)), _titled(f"{title}: {metric} per {param}", rows),
                    axis="y", linewidth=0.3)
            ax.set_axisbelow(True)
            _legend(fig, ax, len(series), title=" / ".join(keys), title_fontsize=7)
            yield fig, exp, title, metric, "by", param


# --- quality vs compression -------------------------------------------------------------------
def pareto_figure(points: Mapping[str, list[tuple[float, float, str]]], metric: str, direction: str, title: str,
                  series_title: str = "", point_title: str = "", predicted: bool = False, unit: str = "") -> Any:
    """Quality against compression: a colour and Pareto front per series, a marker per plan, like points nested."""
    from matplotlib.lines import Line2D
    ax = (fig := _new_figure((7.6, 4.8))).add_subplot()
    plans = list(dict.fromkeys(p for pts in points.values() for _, _, p in pts))
    marker = {p: _MARKERS[i % len(_MARKERS)] for i, p in enumerate(plans)}
    xs, ys = zip(*[(x, y) for pts in points.values() for x, y, _ in pts])
    x_near = 0.02 * ((max(xs) - min(xs)) or 1.0)  # points within 2% of both axes: a reader cannot tell them apart
    y_mid = (min(ys) + max(ys)) / 2
    flat = max(ys) - min(ys) < 1e-4 * (abs(y_mid) or 1.0)  # equal to 4 significant digits: draw them level
    y_span = 0.02 * (abs(y_mid) or 1.0) if flat else max(ys) - min(ys)
    for si, (label, pts) in enumerate(points.items()):
        color = f"C{si % 10}"
        clusters: list[list[tuple[float, float, str]]] = []  # points near the first of each
        for x, y, plan in pts:
            near = next((c for c in clusters if abs(c[0][0] - x) <= x_near and abs(c[0][1] - y) <= 0.02 * y_span), None)
            if near is None:
                clusters.append(near := [])
            near.append((x, y, plan))
        right = max(x for x, _, _ in pts)
        for here in clusters:
            for k, (x, y, plan) in enumerate(here):  # nested: the first largest and filled, the others white inside
                ax.scatter([x], [y], s=80 - 30 * min(k, 2), marker=marker[plan], facecolors="white" if k else color,
                           edgecolors=color, linewidths=1.2, zorder=3 + k)
            left = right - here[0][0] <= x_near and len(clusters) > 1  # rightmost labels: to the left, inside
            exact = len({(x, y) for x, y, _ in here}) == 1
            ax.annotate(_point_label([plan for _, _, plan in here], exact), here[0][:2], fontsize=6.5,
                        xytext=(-7 if left else 7, 5), textcoords="offset points", ha="right" if left else "left",
                        color=color)
        front = sorted(pts[i][:2] for i in pareto_front([p[:2] for p in pts], maximize_y=direction == "higher"))
        (line,) = ax.plot(*zip(*front), drawstyle="steps-post", color=color, linewidth=1.2, alpha=0.7)
        line.set_gid(f"pareto-{label}")
    handles = [Line2D([], [], color=f"C{si % 10}", marker="o", linewidth=1.2, label=label)
               for si, label in enumerate(points)]
    if len(plans) > 1:
        handles.append(Line2D([], [], linestyle="", label=""))  # a gap between the two kinds of entry
        handles += [Line2D([], [], color="0.35", marker=marker[p], linestyle="", label=p) for p in plans]
    titles = [t for t in (f"{series_title or 'series'} (colour; line: Pareto front)",
                          f"{point_title} (marker)" if len(plans) > 1 and point_title else "") if t]
    fig.legend(handles=handles, title="\n".join(titles), fontsize=7, title_fontsize=7, loc="outside right upper")
    _finish(ax, "compression ratio [x] (higher is better)"
            + ("\nfake quantization (fp32 weights) at its plan's predicted ratio" if predicted else ""),
            f"{with_unit(metric, unit)} ({direction} is better)" + ("" if flat else span_note(ys)),
            title, linewidth=0.3)
    ax.margins(x=0.1, y=0.12)
    if flat:  # no axis spanning 1e-8 with an offset label: a 2% window around the value
        ax.set_ylim(y_mid - y_span / 2, y_mid + y_span / 2)
    ax.ticklabel_format(axis="y", useOffset=False)
    return fig


def _point_label(plans: Sequence[str], exact: bool = True) -> str:
    """``bf16/int8 fake``, ``bf16/int8 real`` at one point read ``bf16/int8 fake = real`` (``≈``: not quite one)."""
    first = plans[0].split()
    # each later plan less the words it shares with the first, but never all of them
    out = [plans[0]] + [" ".join(w[min(len(os.path.commonprefix([w, first])), max(min(len(w), len(first)) - 1, 0)):])
                        for w in (plan.split() for plan in plans[1:])]
    text = (" = " if exact else " ≈ ").join(out)
    return text if len(text) <= POINT_LABEL_CHARS or len(plans) == 1 else (
        f"{plans[0]} (+{len(plans) - 1} {'same' if exact else 'near'})")


def quality_series(sel: Sequence[Record], metric: str) -> tuple[dict[str, list[tuple[float, float, str]]], list[str],
                                                                 list[str]]:
    """``{series: [(compression ratio, metric, plan), ...]}`` and the keys that name the series and the points."""
    series_keys = ([k for k in SERIES_KEYS if _varies(sel, k)]
                   or [k for k in ("task",) if all(k in r.config for r in sel)])  # one task: still named
    shown_plan = [k for k in PLAN_KEYS if k not in ("backend", "dtype") and _varies(sel, k)]  # a plan, if it varies
    point_keys = shown_plan + _keys(sel, fixed=[*series_keys, *shown_plan], prefer=PLAN_KEYS)
    series: dict[str, list[tuple[float, float, str]]] = {}
    for r in sel:
        # the measured compression ratio, else (fake quantization) the plan's predicted one, else 1 (fp32 baseline)
        ratio = next((float(r.metrics[m]) for m in ("compression_ratio", "predicted_compression_ratio")
                      if _finite(r.metrics.get(m))), 1.0)
        series.setdefault(_label(r, series_keys) or metric, []).append(
            (ratio, r.metrics[metric], _label(r, point_keys) or r.param or r.name))
    return series, series_keys, point_keys


def _quality(recs: Sequence[Record], info: Mapping[str, MetricInfo]) -> Iterator[tuple[Any, str, str, str, str, str]]:
    """A quality-vs-compression figure per quality metric of each test that measured a compression ratio."""
    for exp, title, group in _by_test(recs):
        if not any(_finite(r.metrics.get("compression_ratio")) for r in group):
            continue
        rows = [r for r in group if _finite(r.metrics.get("compression_ratio"))
                or _finite(r.metrics.get("predicted_compression_ratio"))
                or any(str(r.config.get(k, "")).lower() in ("fp32", "float32") for k in ("mode", "precision", "dtype"))]
        for metric in QUALITY_METRICS:
            direction = info[metric].direction if metric in info else _QUALITY_DIRECTIONS.get(metric)
            sel = [r for r in rows if metric in r.metrics and math.isfinite(r.metrics[metric])]
            if direction not in ("higher", "lower") or len(sel) < 2:
                continue
            series, series_keys, point_keys = quality_series(sel, metric)
            predicted = any(not _finite(r.metrics.get("compression_ratio"))
                            and _finite(r.metrics.get("predicted_compression_ratio")) for r in sel)
            fig = pareto_figure(series, metric, direction, _titled(f"{title}: {metric} vs compression ratio", sel),
                                " / ".join(series_keys), " / ".join(point_keys), predicted, _unit(metric, sel))
            yield fig, exp, title, metric, "vs", "compression"


@_literal_text
def trend_plot(lines: Mapping[str, Sequence[tuple[Any, float]]],
               bands: Sequence[tuple[str, float | None, float | None]], metric: str, unit: str, path: str | Path,
               changes: Sequence[tuple[str, Any, float]] = ()) -> Path:
    """``pytest-genai history``'s trend: a line per label, claims' bounds shaded, change points dashed."""
    ax = (fig := _new_figure((8.0, 4.8))).add_subplot()
    points = [v for pts in lines.values() for _, v in pts if _finite(v, positive=False)]  # linear axis: 0 and below
    values = points + [x for _, low, high in bands for x in (low, high) if _finite(x, positive=False)] if points else []
    for label, pts in lines.items():
        if shown := [(t, v) for t, v in pts if _finite(v, positive=False)]:
            ax.plot([t for t, _ in shown], [v for _, v in shown], marker="o", label=label)
    # a log axis (bands never decide it): slow lines are not flattened onto 0 beside fast ones
    if log := bool(points) and min(points) > 0 and max(points) / min(points) > TREND_LOG_SPAN:
        ax.set_yscale("log")
        shown = [v for v in values if v > 0]  # a band's bound at 0 has no place on a log axis
        ax.set_ylim(min(shown) / 1.3, max(shown) * 1.3)
    elif values:
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
        ax.set_ylim(lo - pad, hi + pad)
    bottom, top = ax.get_ylim()
    for i, (claim, low, high) in enumerate(bands):
        ax.axhspan(bottom if low is None else low, top if high is None else high, alpha=0.12,
                   color=f"C{(i + len(lines)) % 10}",
                   label=f"{claim} [{'' if low is None else f'{low:g}'}, {'' if high is None else f'{high:g}'}]")
    ax.set_ylim(bottom, top)
    for i, (_line, when, step) in enumerate(changes):
        ax.axvline(when, linestyle="--", linewidth=1.0, color="0.3", label="change point" if i == 0 else None)
        ax.annotate(f"{step:+.1%}", xy=(when, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                    textcoords="offset points", fontsize="x-small", rotation=90, va="top", ha="left")
    _finish(ax, "run time (UTC)", with_unit(metric, unit) + (" (log scale)" if log else span_note(points)),
            f"{metric}: history by device generation", alpha=0.3)
    fig.autofmt_xdate()
    _legend(fig, ax, fontsize="small", ncols=1 + (len(ax.get_legend_handles_labels()[0]) - 1) // LEGEND_ROWS)
    return _save(fig, Path(path))
