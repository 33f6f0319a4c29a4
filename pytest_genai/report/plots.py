"""PNG plots of a run: roofline, sweeps, throughput per category, quality vs compression (Pareto), history trend.

What is drawn follows from what the records hold; matplotlib is imported lazily, used through the Agg canvas."""

from __future__ import annotations

import functools
import io
import json
import math
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pytest_genai.atomic import write_bytes_atomic
from pytest_genai.devices.specs import ridge_point
from .output import NameAllocator, file_stem
from .pareto import pareto_front
from pytest_genai.results.registry import QUALITY_METRICS, THROUGHPUT_METRICS, MetricInfo
from pytest_genai.claims import default_metric_info
from .roofline import ceiling_polyline
from pytest_genai.results.runs import Record, config_value_label
from pytest_genai.tables import format_number, format_value, shorten_unique
from .views import distinguishing_keys, group_by, value_key, with_unit

CATEGORY_PARAMS = ("strategy", "parallelism", "dtype", "precision", "mode", "attention", "flash_attention")
"""Categorical config parameters that get a grouped bar chart of throughput (DDP vs FSDP, fp32 vs bf16...)."""
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
    fig = Figure(figsize=size, dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _plain_log_ticks(fig: Any) -> None:
    """Log axes labelled in plain text (``0.06``, ``100``), not the mathtext :func:`_literal_text` turns off."""
    from matplotlib.ticker import LogFormatter, LogFormatterMathtext

    class PlainLog(LogFormatter):
        def __call__(self, x: float, pos: Any = None) -> str:
            return f"{x:g}" if super().__call__(x, pos) else ""

    for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):
        for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                         (axis.get_minor_formatter, axis.set_minor_formatter)):
            if isinstance(current := get(), LogFormatterMathtext):
                put(PlainLog(base=getattr(current, "_base", 10.0), labelOnlyBase=current.labelOnlyBase,
                             minor_thresholds=current.minor_thresholds))


@_literal_text
def _save(fig: Any, path: Path) -> Path:
    _plain_log_ticks(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    try:
        return write_bytes_atomic(path, buf.getvalue())
    except OSError as exc:  # name the plot's path (a full disk named nothing), never the writer's temp file
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


@_literal_text
def write_plots(records: Iterable[Record], outdir: str | Path, info: Mapping[str, MetricInfo] | None = None,
                reserved: Iterable[str] = ()) -> list[Path]:
    """Write every plot the records (those with the genai object) support into ``outdir``, each PNG a different
    file, none named as one of ``reserved``; returns their paths. Raises :class:`PlotsUnavailable` without
    matplotlib."""
    recs = [r for r in records if r.experiment is not None]
    out, taken = Path(outdir), NameAllocator(reserved)
    return [*roofline_plots(recs, out, taken), *sweep_plots(recs, out, taken), *category_plots(recs, out, taken),
            *pareto_plots(recs, out, default_metric_info()[0] if info is None else info, taken)]


# --- roofline ---------------------------------------------------------------------------------

def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite_number(x: Any) -> bool:
    return _numeric(x) and math.isfinite(x)


def _finite(x: Any) -> bool:
    """A finite positive number: a value a log axis can show."""
    return _finite_number(x) and x > 0


def roofline_ceilings(recs: Sequence[Record]) -> list[tuple[str, float, float]]:
    """Distinct (kind, peak TFLOP/s, bandwidth GB/s) roofs of one device's records, measured then spec (recorded,
    else from the device's spec sheet for the config's dtype)."""
    roofs: dict[tuple[str, float, float], None] = {}
    for kind in ("measured", "spec"):
        for r in recs:
            t, g = r.metrics.get(f"ceiling_tflops_{kind}"), r.metrics.get(f"ceiling_gbs_{kind}")
            if _finite(t) and _finite(g):
                roofs.setdefault((kind, float(t), float(g)), None)
    if not any(k == "spec" for k, _, _ in roofs) and recs and recs[0].device is not None:
        roofs.update(dict.fromkeys(("spec", *roof) for roof in map(_spec_roof, recs) if roof is not None))
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


def cpu_roof_note(recs: Sequence[Record]) -> str:
    """Why a CPU's measured roof (on the benchmarks' ``cpu_threads``) is lower than ``pytest-genai devices``'s."""
    threads = sorted({r.labels["cpu_threads"] for r in recs
                      if r.device is not None and r.device.kind == "cpu" and r.labels.get("cpu_threads")}, key=str)
    if not threads:
        return ""
    # two legend lines of at most 60 characters: a longer one is cut off the figure
    return (f"\nmeasured on {'/'.join(threads)} CPU thread{'' if threads == ['1'] else 's'} (as the benchmarks ran);"
            "\n`pytest-genai devices` uses every core: it reads higher")


@_literal_text
def roofline_figure(recs: Sequence[Record], title: str) -> Any:
    """Achieved TFLOP/s against arithmetic intensity, over the device's roofs (log-log)."""
    fig = _new_figure()
    ax = fig.add_subplot()
    pts = [(r.metrics["arithmetic_intensity_modeled"], r.metrics["achieved_tflops"], r.labels.get("bound", "")) for r in recs]
    pts = [(x, y, b) for x, y, b in pts if _finite(x) and _finite(y)]
    roofs = roofline_ceilings(recs)
    xs = [p[0] for p in pts] + [ridge_point(t * 1e12, g * 1e9) for _, t, g in roofs]
    x_min, x_max = (min(xs) / 4, max(xs) * 4) if xs else (0.1, 1000.0)
    styles = {"measured": "-", "spec": "--"}
    for kind, peak, bw in roofs:
        rx, ry = ceiling_polyline(peak, bw, x_min, x_max)
        ridge = ridge_point(peak * 1e12, bw * 1e9)
        (line,) = ax.plot(rx, ry, styles[kind], color="black" if kind == "spec" else "tab:gray", linewidth=1.4,
                          label=f"{kind} roof: {peak:.3g} TFLOP/s, {bw:.3g} GB/s (ridge {ridge:.3g} FLOP/B)"
                          + (cpu_roof_note(recs) if kind == "measured" else ""))
        line.set_gid(f"roof-{kind}")
        ax.axvline(ridge, color=line.get_color(), linestyle=":", linewidth=0.8)
    colors = {"compute": "tab:red", "memory": "tab:blue"}
    for bound in sorted({b for _, _, b in pts}):
        sel = [(x, y) for x, y, b in pts if b == bound]
        ax.scatter([x for x, _ in sel], [y for _, y in sel], s=28, zorder=3, color=colors.get(bound, "tab:green"),
                   label=f"{bound}-bound configs" if bound else "configs")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity, modeled (minimal traffic) [FLOP/byte]")
    ax.set_ylabel("achieved [TFLOP/s]")
    _set_title(ax, title)
    ax.grid(True, which="both", linewidth=0.3)
    if ax.get_legend_handles_labels()[0]:  # below the axes: never over a point
        fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="outside lower center", ncols=1)
    return fig


@_literal_text
def roofline_plots(recs: Sequence[Record], outdir: Path, taken: NameAllocator | None = None) -> list[Path]:
    taken = NameAllocator() if taken is None else taken
    by_device = group_by((r for r in recs if r.device is not None and _finite(r.metrics.get("achieved_tflops"))
                          and _finite(r.metrics.get("arithmetic_intensity_modeled"))), lambda r: r.device.generation)
    return [_save(roofline_figure(group, _titled(f"Roofline — {gen} ({len(group)} configs)", group)),
                  outdir / taken.take(file_stem("roofline", gen))) for gen, group in by_device.items()]


# --- what tells records apart: series and point labels ---------------------------------------------------------

SERIES_PREFERENCE = ("task", "model", "device") + CATEGORY_PARAMS + ("world_size", "batch_size", "layers", "hidden")
"""Keys tried first when a plot needs series: the ones a reader expects a line or a bar colour to stand for."""
PLAN_KEYS = ("precision", "mode", "tiers", "backend", "plan", "bits", "sensitive_fraction", "group_size", "dtype")
"""Keys that name a precision plan: a point of the quality-vs-compression plot."""
MAX_VALUE_CHARS = 24


def _facts(r: Record) -> dict[str, Any]:
    """What a plot may tell records apart by: device generation, model and the config (its ``id`` is derived from the
    rest and left out)."""
    out: dict[str, Any] = {"device": r.device.generation if r.device else None, "model": r.model_label}
    out.update((k, r.model_label if k == "model" and v == r.model else config_value_label(k, v))
               for k, v in r.config.items() if k != "id")
    return out


def short_value(v: Any) -> str:
    """A config value as a legend or tick label: :func:`.tables.format_value`, cut shorter."""
    return format_value(v, MAX_VALUE_CHARS)


def _keys(rows: Sequence[Record], fixed: Sequence[str] = (), prefer: Sequence[str] = ()) -> list[str]:
    """The fewest keys that tell ``rows`` apart beside ``fixed`` (:func:`.views.distinguishing_keys`)."""
    return distinguishing_keys(rows, _facts, fixed, [*prefer, *SERIES_PREFERENCE])


def _line_keys(rows: Sequence[Record], x: str) -> list[str]:
    """What a line of a sweep stands for: the keys that tell the points of one x apart, plus every categorical
    (text) key that varies, so that one line never joins, say, forward and training runs."""
    keys = _keys(rows, fixed=[x])
    text = [k for k in dict.fromkeys(k for r in rows for k in _facts(r)) if k != x and k not in keys
            and any(isinstance(_facts(r).get(k), str) for r in rows)
            and len({repr(_facts(r).get(k)) for r in rows}) > 1]
    return keys + text


def _sort_key(r: Record, keys: Sequence[str]) -> tuple:
    """Orders labels by their keys' values: numbers by value, before text."""
    values = [_facts(r).get(k) for k in keys]
    return tuple((0, v, "") if _numeric(v) else (1, 0, str(v)) for v in values)


def _label(r: Record, keys: Sequence[str]) -> str:
    facts = _facts(r)
    # "—": the record has no such key; the model label is never cut (its "(tiny random)" is what it must say)
    values = [(str(facts[k]) if k == "model" else short_value(facts[k])) if k in facts else "—" for k in keys]
    return " ".join(dict.fromkeys(values))  # "fp32 fp32" reads "fp32"


def _set_title(ax: Any, title: str) -> None:
    """A long title (an experiment with several tests names the test) gets a smaller font, so it fits the axes."""
    longest = max((len(line) for line in title.splitlines()), default=0)
    ax.set_title(title, fontsize=11.0 if longest <= 48 else 9.0 if longest <= 64 else 8.0)


def plot_context(recs: Sequence[Record]) -> str:
    """What a plot's points ran on, for its title's second line: the devices, the models with their scale and
    "random weights" where the run built them so."""
    def few(items: list[str]) -> str:
        items = list(dict.fromkeys(i for i in items if i))
        return ", ".join(items[:3]) + (f" +{len(items) - 3} more" if len(items) > 3 else "") if items else "—"

    devices = few([f"{r.device.name} ({r.device.generation})" if r.device.name and r.device.name != r.device.generation
                   else r.device.generation for r in recs if r.device is not None])
    by_notes: dict[str, list[str]] = {}  # models that share scale and weights are named once: "a, b (tiny, ...)"
    for r in recs:
        notes = [str(r.config["scale"])] if r.config.get("scale") else []
        notes += ["random weights"] if r.config.get("weights") == "random" else []
        by_notes.setdefault(", ".join(notes), []).append(r.model or "")
    models = "; ".join(few(names) + (f" ({notes})" if notes else "") for notes, names in by_notes.items())
    return f"on {devices} · {'models' if ',' in models or ';' in models else 'model'} {models}"


def _titled(title: str, recs: Sequence[Record]) -> str:
    """The title, then what ran, wrapped to fit an axes that shares the figure with a legend."""
    return "\n".join([title, *textwrap.wrap(plot_context(recs), 48)])


def _legend(fig: Any, ax: Any, title: str, n: int) -> None:
    """Beside the axes, never over the data; none for a single series."""
    if n > 1:
        fig.legend(*ax.get_legend_handles_labels(), title=title, fontsize=7, title_fontsize=7,
                   loc="outside right upper")


# --- sweeps and strategies --------------------------------------------------------------------

def _by_test(recs: Sequence[Record]) -> list[tuple[str, str, list[Record]]]:
    """``(experiment, title, records)`` per test function, so one plot never mixes two tests' records; the title
    names the test when its experiment has several."""
    groups = group_by(recs, lambda r: (r.experiment or "", r.name.split("[", 1)[0]))
    tests_per_experiment = Counter(exp for exp, _ in groups)
    return [(exp, f"{exp} ({test.removeprefix('test_')})" if tests_per_experiment[exp] > 1 else exp, rows)
            for (exp, test), rows in groups.items()]


def _path(outdir: Path, taken: NameAllocator, exp: str, title: str, *parts: str) -> Path:
    """``<experiment>_<parts>.png``; the test's name where another test took that name, then a number."""
    stem = file_stem(exp, *parts)
    if f"{stem}.png" in taken:
        stem = file_stem(title, *parts)
    return outdir / taken.take(stem)


def _throughput_tests(recs: Sequence[Record]) -> Iterable[tuple[str, str, list[Record], str]]:
    """:func:`_by_test`'s groups that have a throughput metric, with the first one they have."""
    for exp, title, group in _by_test(recs):
        metric = next((m for m in THROUGHPUT_METRICS if any(m in r.metrics for r in group)), None)
        if metric is not None:
            yield exp, title, group, metric


def _varying(recs: Sequence[Record]) -> list[str]:
    """Config parameters that differ between records; ``id`` (derived from the others) is left out."""
    keys = dict.fromkeys(k for r in recs for k in r.config if k != "id")
    return [k for k in keys if len({repr(r.config.get(k)) for r in recs}) > 1]


def _metric_label(metric: str, rows: Sequence[Record]) -> str:
    """``tokens_per_s [tokens/s]``: the unit the records give the metric."""
    return with_unit(metric, next((r.units[metric] for r in rows if r.units.get(metric)), ""))


def _y_axis(ax: Any, values: Sequence[float], log: bool = True) -> None:
    """A log axis (where ``log``) when the values span more than 20x (throughput across model sizes), thousands
    separators on a linear one."""
    from matplotlib.ticker import FuncFormatter

    positive = [v for v in values if _finite(v)]
    if log and positive and len(positive) == len(values) and max(positive) / min(positive) > 20:
        ax.set_yscale("log")
    elif positive and max(positive) >= 10_000:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))


NARROW_SPAN = 0.01  # values this close fill a linear axis not from 0: its label says so (:func:`span_note`)


def span_note(values: Sequence[float]) -> str:
    """``"\naxis not from 0: all values within 0.11% (21.92-21.94)"`` for values of one sign, not all equal, that
    span less than :data:`NARROW_SPAN` of their size; else ``""``."""
    finite = [float(v) for v in values if _finite_number(v)]
    if not finite:
        return ""
    lo, hi = min(finite), max(finite)
    size = max(abs(lo), abs(hi))
    if hi <= lo or lo * hi <= 0 or (hi - lo) / size >= NARROW_SPAN:
        return ""
    return f"\naxis not from 0: all values within {(hi - lo) / size:.2%} ({format_number(lo)}-{format_number(hi)})"


def _one_to_one(rows: Sequence[Record], a: str, b: str) -> bool:
    pairs = {(repr(r.config.get(a)), repr(r.config.get(b))) for r in rows}
    return len(pairs) == len({p for p, _ in pairs}) == len({q for _, q in pairs})


@_literal_text
def sweep_plots(recs: Sequence[Record], outdir: Path, taken: NameAllocator | None = None) -> list[Path]:
    """Throughput against each numeric config parameter that varies: a line per combination of the other keys that
    tell records apart; a parameter in lockstep with one already drawn (heads with hidden) gets no plot."""
    paths, taken = [], NameAllocator() if taken is None else taken
    for exp, title, group, metric in _throughput_tests(recs):
        drawn: list[str] = []
        for param in _varying(group):
            rows = [r for r in group if metric in r.metrics and _numeric(r.config.get(param))]
            if len({r.config[param] for r in rows}) < 2 or any(_one_to_one(rows, param, d) for d in drawn):
                continue
            keys = _line_keys(rows, param)
            lines = group_by(rows, lambda r: _label(r, keys))
            rows = [r for line in lines.values() if len(line) >= 2 for r in line]  # a one-point line shows no sweep
            if not rows:
                continue
            keys = _line_keys(rows, param)  # what still varies among the lines drawn
            series: dict[str, list[tuple[float, float]]] = {}
            order: dict[str, tuple] = {}
            for r in rows:
                label = _label(r, keys)
                series.setdefault(label, []).append((r.config[param], r.metrics[metric]))
                order[label] = _sort_key(r, keys)
            drawn.append(param)
            fig = _new_figure()
            ax = fig.add_subplot()
            for label in sorted(series, key=order.__getitem__):
                pts = sorted(series[label])
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=label or metric)
            xs = sorted({r.config[param] for r in rows})
            if xs[0] > 0 and xs[-1] / xs[0] >= 8:  # sizes that double: equal steps on a log2 axis
                ax.set_xscale("log", base=2)
            if len(xs) <= 12:
                ax.set_xticks(xs, [short_value(x) for x in xs])
                ax.minorticks_off()
            _y_axis(ax, [r.metrics[metric] for r in rows])
            ax.set_xlabel(param)
            note = span_note([r.metrics[metric] for r in rows]) if ax.get_yscale() == "linear" else ""
            ax.set_ylabel(_metric_label(metric, rows) + note)
            _set_title(ax, _titled(f"{title}: {metric} vs {param}", rows))
            ax.grid(True, linewidth=0.3)
            _legend(fig, ax, " / ".join(keys), len(series))
            paths.append(_save(fig, _path(outdir, taken, exp, title, metric, "vs", param)))
    return paths


@_literal_text
def category_plots(recs: Sequence[Record], outdir: Path, taken: NameAllocator | None = None) -> list[Path]:
    """Grouped bars of throughput per value of a categorical parameter (strategy, dtype, attention...)."""
    paths, taken = [], NameAllocator() if taken is None else taken
    for exp, title, group, metric in _throughput_tests(recs):
        for param in CATEGORY_PARAMS:
            rows = [r for r in group if metric in r.metrics and param in r.config]
            values = list(dict.fromkeys(value_key(r.config[param]) for r in rows))  # full: two values never merge
            if len(values) >= 2 and _compared(rows, param):
                fig = _bars(rows, param, values, metric, _titled(f"{title}: {metric} per {param}", rows))
                paths.append(_save(fig, _path(outdir, taken, exp, title, metric, "by", param)))
    return paths


def _compared(rows: Sequence[Record], param: str) -> bool:
    """Bars per ``param`` compare something when the records form one series, or when some series (the other keys
    held fixed) has bars for two values of ``param``; records that never share their other keys are not drawn."""
    keys = _keys(rows, fixed=[param])
    if not keys:
        return True
    seen: dict[str, set[str]] = {}
    for r in rows:
        seen.setdefault(_label(r, keys), set()).add(value_key(r.config[param]))
    return any(len(v) >= 2 for v in seen.values())


@_literal_text
def _bars(rows: Sequence[Record], param: str, values: Sequence[str], metric: str, title: str) -> Any:
    """One bar per (category, series); series only for keys that vary within a category, each bar labelled."""
    keys = _keys(rows, fixed=[param])
    order = {_label(r, keys): _sort_key(r, keys) for r in rows}
    groups = sorted(order, key=order.__getitem__)
    fig = _new_figure()
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(groups))
    colors = {g: f"C{i % 10}" for i, g in enumerate(groups)}
    at: dict[str, list[tuple[float, float]]] = {g: [] for g in groups}
    for i, v in enumerate(values):
        present = [(g, [r.metrics[metric] for r in rows if value_key(r.config[param]) == v and _label(r, keys) == g])
                   for g in groups]
        present = [(g, found[0]) for g, found in present if found]  # a missing combination is no bar, not a zero
        for k, (g, height) in enumerate(present):  # the bars of one category centred on its tick
            at[g].append((i + (k - (len(present) - 1) / 2) * width, height))
    for g in groups:
        bars = ax.bar([x for x, _ in at[g]], [h for _, h in at[g]], width=width * 0.95, color=colors[g],
                      label=g or metric)
        ax.bar_label(bars, [format_number(h) for _, h in at[g]], fontsize=6 if len(groups) > 2 else 7, padding=2,
                     rotation=90 if len(groups) > 3 else 0)
    # tick texts as short as legends, but never two alike for different values (a bar would seem to be missing)
    ticks = shorten_unique([format_value(json.loads(v), 10_000) for v in values], MAX_VALUE_CHARS)
    long_ticks = len(ticks) > 4 and max(len(t) for t in ticks) > 8
    ax.set_xticks(range(len(ticks)), ticks, rotation=30 if long_ticks else 0, ha="right" if long_ticks else "center")
    ax.set_xlabel(param)
    ax.set_ylabel(_metric_label(metric, rows))
    _y_axis(ax, [r.metrics[metric] for r in rows], log=False)
    ax.margins(y=0.2 if len(groups) > 3 else 0.12)  # room for the value labels
    _set_title(ax, title)
    ax.grid(True, axis="y", linewidth=0.3)
    ax.set_axisbelow(True)
    _legend(fig, ax, " / ".join(keys), len(groups))
    return fig


# --- quality vs compression -------------------------------------------------------------------

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
SERIES_KEYS = ("device", "model", "task")  # what a quality-vs-compression series stands for (those that vary)


def _direction(metric: str, info: Mapping[str, MetricInfo]) -> str | None:
    d = info[metric].direction if metric in info else _QUALITY_DIRECTIONS.get(metric)
    return d if d in ("higher", "lower") else None


@_literal_text
def pareto_figure(points: Mapping[str, list[tuple[float, float, str]]], metric: str, direction: str, title: str,
                  series_title: str = "", point_title: str = "", predicted: bool = False, unit: str = "") -> Any:
    """Quality metric against compression ratio: a colour per series (task), a marker per plan, each series' Pareto
    front as a step line; points of one series that coincide are drawn nested and labelled together."""
    from matplotlib.lines import Line2D

    fig = _new_figure((7.6, 4.8))
    ax = fig.add_subplot()
    plans = list(dict.fromkeys(p for pts in points.values() for _, _, p in pts))
    marker = {p: _MARKERS[i % len(_MARKERS)] for i, p in enumerate(plans)}
    handles = []
    every = [(x, y) for pts in points.values() for x, y, _ in pts]
    x_span = (max(x for x, _ in every) - min(x for x, _ in every)) or 1.0
    y_low, y_high = min(y for _, y in every), max(y for _, y in every)
    y_mid = (y_low + y_high) / 2
    flat = y_high - y_low < 1e-4 * (abs(y_mid) or 1.0)  # equal to 4 significant digits: draw them level
    y_span = 0.02 * (abs(y_mid) or 1.0) if flat else y_high - y_low
    for si, (label, pts) in enumerate(points.items()):
        color = f"C{si % 10}"
        clusters: list[tuple[float, float, list[tuple[float, float, str]]]] = []  # points a reader cannot tell apart
        for x, y, plan in pts:
            near = next((c for c in clusters if abs(c[0] - x) <= 0.02 * x_span and abs(c[1] - y) <= 0.02 * y_span),
                        None)
            if near is None:
                clusters.append((x, y, [(x, y, plan)]))
            else:
                near[2].append((x, y, plan))
        right = max(x for x, _, _ in pts)
        for cx, cy, here in clusters:
            for k, (x, y, plan) in enumerate(here):  # nested: the first largest and filled, the others white inside
                ax.scatter([x], [y], s=80 - 30 * min(k, 2), marker=marker[plan], facecolors="white" if k else color,
                           edgecolors=color, linewidths=1.2, zorder=3 + k)
            left = right - cx <= 0.02 * x_span and len(clusters) > 1  # rightmost labels: to the left, inside
            exact = len({(x, y) for x, y, _ in here}) == 1
            ax.annotate(_point_label([plan for _, _, plan in here], exact), (cx, cy), fontsize=6.5,
                        xytext=(-7 if left else 7, 5), textcoords="offset points", ha="right" if left else "left",
                        color=color)
        xy = [(x, y) for x, y, _ in pts]
        front = sorted(pareto_front(xy, maximize_x=True, maximize_y=direction == "higher"), key=lambda i: xy[i])
        (line,) = ax.plot([xy[i][0] for i in front], [xy[i][1] for i in front], drawstyle="steps-post", color=color,
                          linewidth=1.2, alpha=0.7)
        line.set_gid(f"pareto-{label}")
        handles.append(Line2D([], [], color=color, marker="o", linewidth=1.2, label=label))
    if len(plans) > 1:
        handles.append(Line2D([], [], linestyle="", label=""))  # a gap between the two kinds of entry
        handles += [Line2D([], [], color="0.35", marker=marker[p], linestyle="", label=p) for p in plans]
    titles = [t for t in (f"{series_title or 'series'} (colour; line: Pareto front)",
                          f"{point_title} (marker)" if len(plans) > 1 and point_title else "") if t]
    fig.legend(handles=handles, title="\n".join(titles), fontsize=7, title_fontsize=7, loc="outside right upper")
    ax.set_xlabel("compression ratio [x] (higher is better)"
                  + ("\nfake quantization (fp32 weights) at its plan's predicted ratio" if predicted else ""))
    ax.set_ylabel(f"{with_unit(metric, unit)} ({direction} is better)"
                  + ("" if flat else span_note([y for _, y in every])))
    _set_title(ax, title)
    ax.grid(True, linewidth=0.3)
    ax.margins(x=0.1, y=0.12)
    if flat:  # no axis spanning 1e-8 with an offset label: a 2% window around the value
        ax.set_ylim(y_mid - y_span / 2, y_mid + y_span / 2)
    ax.ticklabel_format(axis="y", useOffset=False)
    return fig


POINT_LABEL_CHARS = 40  # a longer point label names its first plan and a count (the legend's markers tell them apart)


def _point_label(plans: Sequence[str], exact: bool = True) -> str:
    """``bf16/int8 fake``, ``bf16/int8 real`` at one point read ``bf16/int8 fake = real`` (``≈`` when they differ
    by less than the eye can see)."""
    first = plans[0].split()
    out = [plans[0]]
    for plan in plans[1:]:
        words = plan.split()
        same = 0
        while same < min(len(words), len(first)) - 1 and words[same] == first[same]:
            same += 1
        out.append(" ".join(words[same:]))
    text = (" = " if exact else " ≈ ").join(out)
    return text if len(text) <= POINT_LABEL_CHARS or len(plans) == 1 else (
        f"{plans[0]} (+{len(plans) - 1} {'same' if exact else 'near'})")


def _fp32(r: Record) -> bool:
    return any(str(r.config.get(k, "")).lower() in ("fp32", "float32") for k in ("mode", "precision", "dtype"))


def quality_series(sel: Sequence[Record], metric: str) -> tuple[dict[str, list[tuple[float, float, str]]], list[str],
                                                                 list[str]]:
    """``{series: [(compression ratio, metric, plan), ...]}`` and the keys naming series (task, and device / model
    where they vary) and points (the precision plan, and what else tells them apart)."""
    series_keys = ([k for k in SERIES_KEYS if len({repr(_facts(r).get(k)) for r in sel}) > 1]
                   or [k for k in ("task",) if all(k in r.config for r in sel)])  # one task: still named
    shown_plan = [k for k in PLAN_KEYS if k not in ("backend", "dtype")  # what names a plan, if it varies
                  and len({repr(_facts(r).get(k)) for r in sel}) > 1]
    point_keys = shown_plan + _keys(sel, fixed=[*series_keys, *shown_plan], prefer=PLAN_KEYS)
    series: dict[str, list[tuple[float, float, str]]] = {}
    for r in sel:
        series.setdefault(_label(r, series_keys) or metric, []).append(
            (_compression(r), r.metrics[metric], _label(r, point_keys) or r.param or r.name))
    return series, series_keys, point_keys


def _compression(r: Record) -> float:
    """The measured compression ratio, else (fake quantization) the plan's predicted one, else 1 (fp32 baseline)."""
    for metric in ("compression_ratio", "predicted_compression_ratio"):
        if _finite(r.metrics.get(metric)):
            return float(r.metrics[metric])
    return 1.0


@_literal_text
def pareto_plots(recs: Sequence[Record], outdir: Path, info: Mapping[str, MetricInfo],
                 taken: NameAllocator | None = None) -> list[Path]:
    paths, taken = [], NameAllocator() if taken is None else taken
    for exp, title, group in _by_test(recs):
        if not any(_finite(r.metrics.get("compression_ratio")) for r in group):
            continue
        rows = [r for r in group if _finite(r.metrics.get("compression_ratio"))
                or _finite(r.metrics.get("predicted_compression_ratio")) or _fp32(r)]
        for metric in QUALITY_METRICS:
            direction = _direction(metric, info)
            sel = [r for r in rows if metric in r.metrics and math.isfinite(r.metrics[metric])]
            if direction is None or len(sel) < 2:
                continue
            series, series_keys, point_keys = quality_series(sel, metric)
            predicted = any(not _finite(r.metrics.get("compression_ratio"))
                            and _finite(r.metrics.get("predicted_compression_ratio")) for r in sel)
            unit = next((r.units[metric] for r in sel if r.units.get(metric)), "")
            fig = pareto_figure(series, metric, direction, _titled(f"{title}: {metric} vs compression ratio", sel),
                                " / ".join(series_keys), " / ".join(point_keys), predicted, unit)
            paths.append(_save(fig, _path(outdir, taken, exp, title, metric, "vs", "compression")))
    return paths


TREND_LOG_SPAN = 10  # a history of positive values spanning more than this factor is drawn on a log axis


@_literal_text
def trend_plot(lines: Mapping[str, Sequence[tuple[Any, float]]], bands: Sequence[tuple[str, float | None, float | None]],
               metric: str, unit: str, path: str | Path,
               changes: Sequence[tuple[str, Any, float]] = ()) -> Path:
    """``pytest-genai history``'s trend: a line of (time, value) per label, each claim's ``(id, min, max)`` bounds
    shaded (a one-sided one to the plot's edge), each change point ``(line, time, step)`` a dashed line, its step
    written beside it."""
    fig = _new_figure((8.0, 4.8))
    ax = fig.add_subplot()
    points = [v for pts in lines.values() for _, v in pts if _finite_number(v)]  # linear axis: 0 and below shown
    values = points + [x for _, low, high in bands for x in (low, high) if _finite_number(x)] if points else []
    for label, pts in lines.items():
        shown = [(t, v) for t, v in pts if _finite_number(v)]
        if shown:
            ax.plot([t for t, _ in shown], [v for _, v in shown], marker="o", label=label)
    log = bool(points) and min(points) > 0 and max(points) / min(points) > TREND_LOG_SPAN  # bands never decide it
    if log:  # slow lines are not flattened onto 0 beside fast ones
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
    ax.set_ylabel(with_unit(metric, unit) + (" (log scale)" if log else span_note(points)))
    ax.set_xlabel("run time (UTC)")
    _set_title(ax, f"{metric}: history by device generation")
    ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    entries = len(ax.get_legend_handles_labels()[0])
    if entries:  # beside the axes, never over the plot, in columns of LEGEND_ROWS
        fig.legend(*ax.get_legend_handles_labels(), fontsize="small", loc="outside right upper",
                   ncols=1 + (entries - 1) // LEGEND_ROWS)
    return _save(fig, Path(path))


LEGEND_ROWS = 18  # entries per column of the trend plot's legend: what fits its height in small font
