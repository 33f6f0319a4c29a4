"""The run report as a list of blocks, rendered to Markdown (CI comment) or self-contained HTML."""

from __future__ import annotations

import base64
import html
import os
import re
import textwrap
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

from pytest_genai.experiments import label as experiment_label
from pytest_genai.results.registry import MetricInfo
from pytest_genai.results.runs import Run
from pytest_genai.tables import Table, md_block_starts, md_inline, one_line, visible
from .views import (
    BASIS_NOTE, REFERENCE_NOTE, claims_tables, experiment_tables, machine_table, paper_claims_tables, reference_table,
    undecided_reasons, without_reference,
)


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Image:
    path: Path
    caption: str


Block = Union[Heading, Paragraph, Table, Image]

MARKDOWN_LINE_CHARS = 120  # paragraph wrap width (a soft break renders as a space)


def report_blocks(run: Run, info: Mapping[str, MetricInfo], claims_by_id: Mapping[str, Any],
                  images: Sequence[Path] = (), notes: Sequence[str] = ()) -> list[Block]:
    """The first screen (summary, machine, claims by paper), the claim checks by test, the experiments, the plots."""
    recs = run.records
    blocks: list[Block] = [Heading(f"pytest-genai report — {Path(run.source).name}", 1)]
    experiments = Counter(r.experiment or "pytest-benchmark" for r in recs)
    devices = sorted({r.device.generation for r in recs if r.device is not None})
    verdicts = Counter(str(c.get("verdict", "?")) for r in recs for c in r.claims)
    summary = [f"{len(recs)} benchmarks", "experiments: " + ", ".join(f"{e} ({n})" for e, n in experiments.items()),
               "devices: " + (", ".join(devices) or "—"),
               "claims: " + (", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) or "none checked"),
               *([f"run at {run.datetime}"] if run.datetime else [])]
    from pytest_genai.claims.check import contended_share, contention_note

    shares = {r.fullname or r.name: s for r in recs if (s := contended_share(r.attachments)) is not None}
    contention = contention_note(shares, len(recs))
    blocks += [Paragraph(" · ".join(summary)), machine_table(run), *([Paragraph(contention)] if contention else []),
               *(Paragraph(f"Note: {note}") for note in [*notes, *run.warnings])]
    references = reference_table(recs)
    recs = without_reference(recs)  # a vendor's number is no paper's claim: its verdicts get their own section
    papers, folded = paper_claims_tables(recs, claims_by_id)
    blocks += [Heading("Claims by paper")] if papers or folded else []
    blocks += _captioned(papers) + ([Paragraph(f"{folded} not_applicable checks not shown: scoped to another "
                                               "device, model or config (each benchmark's JSON lists them).")]
                                    if folded else [])
    undecided = undecided_reasons(recs)
    blocks += [Paragraph("Not decided (inconclusive): " + "; ".join(undecided) + ".")] if undecided else []
    claims = claims_tables(recs, claims_by_id)
    blocks += [Heading("Claims"), *(_captioned(claims) or [Paragraph("No claims were checked in this run.")])]
    if any(row[6] in ("target", "physics") for _, table in claims for row in table.rows):
        blocks.append(Paragraph(BASIS_NOTE))
    if references is not None:
        blocks += [Heading("Vendor reference numbers"), Paragraph(REFERENCE_NOTE), references]
    for group in experiment_tables(recs, info):
        blocks.append(Heading(f"Experiment: {experiment_label(group.experiment)} — {group.test}"))
        blocks += [Paragraph(f"Same {what} every row: {text}") for what, text in
                   (("in", group.shared), ("value in", group.constant)) if text]
        blocks.extend(group.tables)
    if any("modeled" in r.sources.values() for r in recs):
        blocks.append(Paragraph("Columns marked (modeled), or whose name says modeled or predicted, are computed from "
                                "a model of the hardware, not measured."))
    if images:
        blocks += [Heading("Plots"), *(Image(Path(p), Path(p).stem) for p in images)]
    return blocks


def _captioned(tables: Sequence[tuple[str, Table]]) -> list[Block]:
    """Each table under a ``name:`` line."""
    return [block for name, table in tables for block in (Paragraph(f"{name}:"), table)]


def to_markdown(blocks: Sequence[Block], base_dir: Path | None = None) -> str:
    """GitHub Markdown; image links are relative to ``base_dir`` (where the Markdown file will live)."""
    parts = []
    for b in blocks:
        # names from the run are text, never Markdown: escaped, and kept on one line
        if isinstance(b, Heading):
            parts.append("#" * b.level + " " + md_inline(one_line(b.text)))
        elif isinstance(b, Paragraph):  # soft line breaks: the same paragraph, readable as plain text too
            parts.append(md_block_starts(textwrap.fill(md_inline(one_line(b.text)), MARKDOWN_LINE_CHARS,
                                                       break_long_words=False, break_on_hyphens=False)))
        elif isinstance(b, Table):
            parts.append(b.to_markdown())
        elif isinstance(b, Image):
            link = b.path.as_posix()
            if base_dir is not None:
                with suppress(ValueError):  # different drive on Windows
                    link = Path(os.path.relpath(b.path.resolve(), base_dir.resolve())).as_posix()
            if re.search(r"[\s()<>]", link):  # CommonMark: a destination with spaces or parentheses goes in <...>
                link = "<" + link.replace("<", "%3C").replace(">", "%3E") + ">"
            parts.append(f"![{md_inline(one_line(b.caption))}]({link})")
    return "\n\n".join(parts) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}
td.v-pass{background:#e3f4e6}
td.v-fail{background:#fbe0e0}
td.v-inconclusive{background:#fdf3d4}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
figure{margin:0 0 1.5em}
"""


def to_html(blocks: Sequence[Block]) -> str:
    """A single self-contained HTML page: images are embedded as base64 data URIs."""
    title = visible(one_line(next((b.text for b in blocks if isinstance(b, Heading)), "pytest-genai report")))
    parts = []
    for b in blocks:  # no control character raw in the page (NUL, ESC): visible() writes them as \xNN
        if isinstance(b, Heading):
            parts.append(f"<h{b.level}>{html.escape(visible(one_line(b.text)))}</h{b.level}>")
        elif isinstance(b, Paragraph):
            parts.append(f"<p>{html.escape(visible(b.text))}</p>")
        elif isinstance(b, Table):
            parts.append(b.to_html())
        elif isinstance(b, Image):
            data = base64.b64encode(b.path.read_bytes()).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(visible(b.caption))}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{html.escape(visible(b.caption))}</figcaption></figure>")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{_CSS}</style>\n</head>\n<body>\n" + "\n".join(parts) + "\n</body>\n</html>\n")


def render(run: Run, info: Mapping[str, MetricInfo], claims: Mapping[str, Any], images: Sequence[Path],
           notes: Sequence[str], fmt: str, base_dir: Path | None = None) -> str:
    """The report of ``run``: ``html`` (one page, plots embedded) or Markdown linking ``images`` from ``base_dir``."""
    blocks = report_blocks(run, info, claims, images, notes)
    return to_html(blocks) if fmt == "html" else to_markdown(blocks, base_dir)
