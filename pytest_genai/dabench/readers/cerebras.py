"""Cerebras compiler ``compile_report.txt`` (WSE) -> :class:`DataflowProfile`.

Format read (Cerebras developer documentation, "Compile Report", docs.cerebras.net/en/latest/compiler-reports/
compile-report.html, R1.x-2.0; also quoted in ALCF's ai-testbed-userdocs "Performance Tools"): a block headed
``Estimated Overall Performance`` with ``Key: value`` lines -- ``Samples/s``, ``Compute Samples/s``,
``Transmission Samples/s``, ``Active PEs`` (percent of the wafer's PEs) and ``Compute Utilization`` (percent) --
followed by a ``|``-separated table with one row per kernel: ``Kernel Name | Samples/s | Compute Samples/s |
Transmission Samples/s | Active PEs | Compute Utilization`` (per-kernel Active PEs is a count of PEs). Table rules
(``+---+``) and blank rows are skipped; text after the table (later sections) is not read.

What real reports hold (public GPT-2 reports from a WSE-2): ``--`` cells (no estimate) on hundreds of rows;
hierarchical kernel names -- ``attention3``, ``attention3.compute_core``,
``attention3.compute_core.attn_fc_q_proj.lib_fc`` -- whose nested rows are parts of their parent (summing every row
double-counts); embedding, layer-norm, loss and optimizer kernels beside the layers' kernels.

Mapping: allocation ratio = overall Active PEs / 100 (the compiler rounds it to a whole percent).

Load imbalance, the way the DABench-LLM authors take it (their notebooks ``cerebras/report/1_6_0data_processing.ipynb``
and ``experiment_transformer.ipynb`` in ``augustuszzq/Regular-DABench-LLM``): the subtasks are the rows whose whole
name is ``fc<i>`` or ``attention<i>`` (their filters ``^(fc)\\d+$`` and ``^(attention)\\d+$``), each read from its own
row (a ``--`` cell is dropped, as their ``pd.to_numeric(..., errors='coerce')`` + ``dropna`` does), unweighted (each
row one subtask). Each subtask's load = its time per sample, 1 / Samples/s (the wafer pipelines its kernels, so the
slowest bounds the throughput: the notebooks plot these rows' Samples/s against the report's overall Samples/s), and
LI = mean(load) / max(load) (docs/dabench.md has its values on the authors' decoder-block sweep reports). The
figure over every top-level kernel sorted as a layer kernel (mostly few-PE ``add``/``dropout``/``cast``/``pack``
kernels, and ``emb``/``pos_encoding``) is kept as ``load_imbalance_all_layer_kernels``, not the paper's statistic.

For that figure and the PE counts, a nested row is folded into its top-level kernel (no ``.`` in the name): where the
parent's own cell is ``--`` its figure comes from its nearest listed descendants (Active PEs summed, Samples/s the
slowest, since the parts run as a pipeline); where the parent has a figure, the parts are not added to it. Top-level
kernels are sorted into layer kernels and non-layer kernels (embedding, layer norm, loss, optimizer, head) by name.
``--`` and other non-numeric cells are missing values (left out, counted in ``missing_cells``), never zeros.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pytest_genai.dabench.balance import LI_DEFINITIONS, load_imbalance
from pytest_genai.dabench.readers import DataflowProfile, LayoutError, parse_cell

HEADER = "Estimated Overall Performance"
KERNEL_COLUMNS = ("Kernel Name", "Samples/s", "Compute Samples/s", "Transmission Samples/s", "Active PEs",
                  "Compute Utilization")
REQUIRED_OVERALL = ("Samples/s", "Active PEs", "Compute Utilization")

#: Non-layer kernels by their whole name (first match wins; an optional layer index at the end); every other
#: top-level kernel is a layer kernel. Whole names, not substrings: ``position_wise_ffn3``, ``attn_head`` and
#: ``transformer_block_norm_ffn3`` are parts of a decoder block and count in its load balance.
NON_LAYER = (
    ("optimizer", re.compile(r"(adam\w*|sgd\w*|lamb\w*|\w*optimi[sz]er\w*|weight_?update\w*|"
                             r"grad(ient)?_?(norm|clip\w*|accum\w*|scal\w*))")),
    ("loss", re.compile(r"(\w+_)?loss(_\w+)?|cross_?entropy\w*")),
    ("embedding", re.compile(r"(\w+_)?embed(ding)?s?|wte|wpe|(position|pos|token_type)_?(embed(ding)?s?|ids)")),
    ("layer_norm", re.compile(r"(final_?|input_?|post_?attention_?)?(layer_?|rms_?)?norm(_?f)?|ln(_?f|_?final)?")),
    ("head", re.compile(r"lm_?head|head|classifier\w*|pooler\w*")),
)


#: The rows DABench-LLM's authors take as the subtasks of the load balance (whole names, as their notebooks filter).
AUTHORS_SUBTASKS = re.compile(r"(fc|attention)\d+")
AUTHORS_SUBTASKS_TEXT = ("fc<i> and attention<i> rows (DABench-LLM's notebooks: ^(fc)\\d+$, ^(attention)\\d+$), each "
                         "row's own Samples/s, unweighted; time per sample = 1 / Samples/s")


def kernel_category(name: str) -> str:
    """``layer`` or the non-layer category (optimizer, loss, embedding, layer_norm, head) of a top-level kernel."""
    low = re.sub(r"_?\d+$", "", name.lower())  # a layer index: layer_norm3, ln2
    for category, pattern in NON_LAYER:
        if pattern.fullmatch(low):
            return category
    return "layer"


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A top-level kernel with its nested rows folded in (None: no figure for it anywhere in its subtree)."""

    name: str
    category: str
    samples_per_s: float | None
    active_pes: float | None
    nested_rows: int


def _fold(name: str, rows: dict[str, list[float | None]], col: int, combine) -> float | None:
    """The kernel's own figure, else ``combine`` over its nearest descendants that have one (recursively)."""
    own = rows.get(name, [None] * len(KERNEL_COLUMNS))[col]
    if own is not None:
        return own
    prefix = name + "."
    children = {n[:len(prefix)] + n[len(prefix):].split(".", 1)[0] for n in rows if n.startswith(prefix)}
    values = [v for v in (_fold(c, rows, col, combine) for c in sorted(children)) if v is not None]
    return combine(values) if values else None


def top_level_kernels(rows: dict[str, list[float | None]]) -> list[Kernel]:
    """Fold every row into its top-level kernel (in first-seen order)."""
    tops = list(dict.fromkeys(name.split(".", 1)[0] for name in rows))
    return [
        Kernel(top, kernel_category(top), _fold(top, rows, 0, min), _fold(top, rows, 3, sum),
               sum(1 for n in rows if n.startswith(top + ".")))
        for top in tops
    ]


def parse_compile_report(text: str, *, li_definition: str = "mean_over_max",
                         source: str = "compile_report.txt") -> DataflowProfile:
    lines = text.removeprefix("\ufeff").splitlines()  # a BOM before the header read as "not a compile report"
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADER)
    except StopIteration:
        raise LayoutError(source, None, f"a line {HEADER!r} (not a Cerebras compile report?)") from None
    overall: dict[str, float | None] = {}
    rows: dict[str, list[float | None]] = {}
    missing = 0
    in_table = closed = False
    last = start + 1
    for number, line in enumerate(lines[start + 1:], start=start + 2):
        s = line.strip()
        last = number
        if not s or set(s) <= set("-+=|"):
            closed = closed or (in_table and bool(rows) and bool(s))  # the rule after the last kernel row
            continue
        if s.startswith("|"):
            closed = False
            cells = [c.strip() for c in s.strip("|").split("|")]
            if not in_table:
                if tuple(cells) != KERNEL_COLUMNS:
                    raise LayoutError(source, number, "the kernel table header " + " | ".join(KERNEL_COLUMNS), s)
                in_table = True
                continue
            if len(cells) != len(KERNEL_COLUMNS):
                raise LayoutError(source, number, f"a kernel row of {len(KERNEL_COLUMNS)} cells", s)
            if not any(cells):
                continue
            if not cells[0]:
                raise LayoutError(source, number, "a kernel name in the first cell", s)
            values = [parse_cell(c, field=f"{source}:{number}: {cells[0]}: {col}")
                      for c, col in zip(cells[1:], KERNEL_COLUMNS[1:])]
            missing += sum(v is None for v in values)
            if cells[0] in rows:
                raise LayoutError(source, number, f"one row per kernel; {cells[0]!r} is listed twice", s)
            rows[cells[0]] = values
        elif in_table:
            break  # a later section of the report
        elif ":" in s:
            key, value = (part.strip() for part in s.split(":", 1))
            overall[key] = parse_cell(value, field=f"{source}:{number}: {key}")
        else:
            raise LayoutError(source, number, "'Key: value' lines of the overall estimate, then the kernel table", s)
    for key in REQUIRED_OVERALL:
        if key not in overall:
            raise LayoutError(source, None, f"the overall field {key!r} under {HEADER!r}")
    # a report cut short (a copy interrupted, a full disk) must not read as a complete one with fewer kernels
    if not rows:
        raise LayoutError(source, last, "the kernel table (" + " | ".join(KERNEL_COLUMNS) + ") with its rows after "
                          "the overall estimate (file truncated?)")
    if not closed:
        raise LayoutError(source, last, "the kernel table's closing +---+ rule after its last row (file truncated?)")
    kernels = top_level_kernels(rows)
    layers = [k for k in kernels if k.category == "layer"]
    all_layer_loads = [1.0 / k.samples_per_s for k in layers if k.samples_per_s]
    # the authors' subtasks: each fc<i> / attention<i> row's own figure ('--' dropped, never folded from its parts)
    authors = {name: values[0] for name, values in rows.items() if AUTHORS_SUBTASKS.fullmatch(name)}
    loads = tuple(1.0 / rate for rate in authors.values() if rate)
    active, util = overall["Active PEs"], overall["Compute Utilization"]
    extra: dict[str, float] = {}
    for key, name in (("Samples/s", "samples_per_s"), ("Compute Samples/s", "compute_samples_per_s"),
                      ("Transmission Samples/s", "transmission_samples_per_s")):
        if overall.get(key) is not None:
            extra[name] = overall[key]
    if util is not None:
        extra["compute_utilization"] = util / 100.0
        if active is not None:
            extra["wafer_utilization_estimate"] = active * util / 1e4
    extra["kernels"] = float(len(kernels))
    extra["kernel_rows"] = float(len(rows))
    extra["layer_kernels"] = float(len(layers))
    extra["non_layer_kernels"] = float(len(kernels) - len(layers))
    extra["layer_kernels_without_rate"] = float(len(layers) - len(all_layer_loads))
    extra["li_subtask_rows"] = float(len(authors))
    extra["li_subtask_rows_without_rate"] = float(len(authors) - len(loads))
    extra["missing_cells"] = float(missing)
    extra["kernel_active_pes_total"] = sum(k.active_pes or 0.0 for k in kernels)
    extra["layer_kernel_active_pes"] = sum(k.active_pes or 0.0 for k in layers)
    if all_layer_loads:
        extra["load_imbalance_all_layer_kernels"] = load_imbalance(all_layer_loads, li_definition)
    if loads:
        subtasks = f"{len(loads)} {AUTHORS_SUBTASKS_TEXT}"
        if len(authors) > len(loads):
            subtasks += f"; {len(authors) - len(loads)} such row(s) without a figure left out"
    else:
        # no LI rather than one over other kernels: the claim is judged on the authors' statistic or not at all
        subtasks = (f"none: the report has {len(authors)} fc<i>/attention<i> row(s) with a Samples/s figure, the "
                    "rows DABench-LLM takes as subtasks (a workload whose kernels are named otherwise has no LI "
                    "by the authors' method; the all-kernel figure is load_imbalance_all_layer_kernels)")
    return DataflowProfile(
        vendor="cerebras",
        source_format="compile_report.txt (Cerebras compile report)",
        allocation_ratio=None if active is None else active / 100.0,
        allocation_units="PE",
        load_imbalance=load_imbalance(loads, li_definition) if loads else None,
        li_definition=LI_DEFINITIONS[li_definition],
        li_subtasks=subtasks,
        subtask_loads=loads,
        extra=extra,
    )


def read_compile_report(path: str | Path, root: str | Path | None = None, **kwargs: str) -> DataflowProfile:
    """Read ``path`` (:func:`~pytest_genai.dabench.readers.read_vendor_text`: UTF-8, never through a link out of
    ``root``)."""
    from pytest_genai.dabench.readers import read_vendor_text

    return parse_compile_report(read_vendor_text(path, root), source=str(path), **kwargs)
