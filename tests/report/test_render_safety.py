"""Names from a run are text in a report, never Markdown, HTML or terminal control: escaped in headings and prose, a
line break cannot split a heading, NUL and ESC never go out raw (docs/reliability.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_genai.claims import default_metric_info
from pytest_genai.report.render import Heading, Paragraph, report_blocks, to_html, to_markdown
from pytest_genai.results.runs import load_run
from pytest_genai.tables import make_table

from .runfiles import bench, run_doc

EVIL = "**quant** _x_ [link](http://e.example) <b>bold</b> `code` ~gone~ &amp; | a # b"
SPLIT = "quant\n# injected heading\n- a list\n1. item\n==="
CONTROL = "gen\x00nul\x1b[31mred\x1b]0;title\x07\x9b"


def _report(tmp_path: Path, experiment: str, test: str = "test_q") -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_doc([bench(f"{test}[a]", experiment, {"mode": "fp32", "id": "a"},
                                              {"tokens_per_s": 1.0}),
                                        bench(f"{test}[b]", experiment, {"mode": "bf16", "id": "b"},
                                              {"tokens_per_s": 2.0})])))
    return str(path)


def _plain(tokens) -> str:
    out = []
    for t in tokens:
        if t.type in ("text", "code_inline"):
            out.append(t.content)
        elif t.type == "softbreak":
            out.append(" ")
    return "".join(out)


def test_markdown_in_an_experiment_name_is_shown_as_written(tmp_path: Path) -> None:
    """An experiment named `**quant** [link](...)` rendered bold and a link in its heading and in the summary."""
    markdown_it = pytest.importorskip("markdown_it")
    run = load_run(_report(tmp_path, EVIL))
    blocks = report_blocks(run, default_metric_info()[0], {}, [], [])
    md = to_markdown(blocks)
    tokens = markdown_it.MarkdownIt("commonmark").enable("strikethrough").enable("table").parse(md)
    inline = [t for i, t in enumerate(tokens) if t.type == "inline" and tokens[i - 1].type in ("heading_open",
                                                                                               "paragraph_open")]
    expected = [b.text for b in blocks if isinstance(b, (Heading, Paragraph))]
    for node in inline:
        assert {c.type for c in node.children} <= {"text", "softbreak"}, node.content
    assert [_plain(n.children) for n in inline] == expected
    assert any(EVIL in text for text in expected)


def test_a_line_break_in_a_name_cannot_split_a_heading_or_start_a_block(tmp_path: Path) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    run = load_run(_report(tmp_path, SPLIT, test="test_q"))
    blocks = report_blocks(run, default_metric_info()[0], {}, [], [])
    md = to_markdown(blocks)
    tokens = markdown_it.MarkdownIt("commonmark").parse(md)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert len(headings) == sum(isinstance(b, Heading) for b in blocks)
    assert not any(t.type in ("bullet_list_open", "ordered_list_open") for t in tokens)
    assert "injected heading" not in " ".join(h for h in headings if not h.startswith("Experiment"))
    assert not any(line.startswith("# injected") for line in md.splitlines())


@pytest.mark.parametrize("where", ["experiment", "test"])
def test_nul_and_esc_never_go_out_raw(where: str, tmp_path: Path) -> None:
    run = load_run(_report(tmp_path, CONTROL if where == "experiment" else "quant",
                           test="test_" + CONTROL if where == "test" else "test_q"))
    blocks = report_blocks(run, default_metric_info()[0], {}, [], [])
    for text in (to_markdown(blocks), to_html(blocks)):
        assert not any(c in text for c in "\x00\x1b\x07\x9b"), repr(text[:400])
        assert "\\x1b" in text and "\\x00" in text
    table = make_table(["name"], [[CONTROL]])
    for text in ("\n".join(table.to_text()), table.to_markdown(), table.to_html()):  # terminal, md, html
        assert not any(c in text for c in "\x00\x1b\x07\x9b")


def test_report_on_the_terminal_carries_no_escape_sequence(tmp_path: Path, capsys) -> None:
    from pytest_genai.cli.report import report_main

    assert report_main([_report(tmp_path, CONTROL)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# pytest-genai report") and "\x1b" not in out.out and "\x00" not in out.out


@pytest.mark.parametrize("mark", ["-", "+", ">", "1.", "2)", "===", "#"])
def test_a_wrapped_line_of_prose_never_opens_a_block(mark: str) -> None:
    """Wrapping at 120 characters can put any word of a name at a line's start: `- x` would open a list there."""
    markdown_it = pytest.importorskip("markdown_it")
    text = "x" * 119 + f" {mark} y " + "z" * (116 - len(mark)) + f" {mark} w"  # each mark starts a line
    md = to_markdown([Paragraph(text)])
    assert all(line.split()[0] != mark for line in md.splitlines()[1:] if line), md  # each escaped where it starts
    assert len(md.splitlines()) == 3  # the mark did start the second and third lines
    tokens = markdown_it.MarkdownIt("commonmark").parse(md)
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"], md
    assert _plain(tokens[1].children) == text


CELL = "test_q[<script>alert(1)</script> [x](http://e.example) &amp; \u202egnp.exe]"


def test_html_links_and_bidi_controls_in_a_table_cell_are_text(tmp_path: Path) -> None:
    """A benchmark's name went into table cells raw: `<script>` survived CommonMark, `[x](y)` was a link, and U+202E
    reordered the text after it."""
    markdown_it = pytest.importorskip("markdown_it")
    table = make_table(["benchmark", "value"], [[CELL, "1"]])
    md = table.to_markdown()
    assert "\u202e" not in md and "\\u202e" in md
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(md)
    inline = [t for t in tokens if t.type == "inline"]
    for node in inline:
        assert {c.type for c in node.children} <= {"text"}, node.content
    assert _plain(inline[2].children) == CELL.replace("\u202e", "\\u202e")
    for text in ("\n".join(table.to_text()), table.to_html()):
        assert "\u202e" not in text
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_doc([bench(CELL, "quant", {"id": "a"}, {"tokens_per_s": 1.0})])))
    md = to_markdown(report_blocks(load_run(str(path)), default_metric_info()[0], {}, [], []))
    import re

    assert "\u202e" not in md and not re.search(r"(?<!\\)(<script>|\]\(http)", md), md


@pytest.mark.parametrize("name", ['=HYPERLINK("http://e.example","x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)"])
def test_a_csv_cell_never_starts_a_formula(name: str, tmp_path: Path, capsys) -> None:
    """`compare --format csv` wrote `=HYPERLINK(...)` as it was: a spreadsheet runs it."""
    import csv
    import io

    from pytest_genai.cli.report import compare_main
    from pytest_genai.report.export import csv_text

    runs = []
    for i, value in enumerate((1.0, 2.0)):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(run_doc([bench(f"test_q[{name}]", "quant", {"id": name}, {"tokens_per_s": value})])))
        runs.append(str(path))
    capsys.readouterr()
    assert compare_main([*runs, "--format", "csv", "--all"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) >= 2
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not c[1:2].isdigit())], cells
    (cell,) = next(csv.reader(io.StringIO(csv_text(["n"], [[name]]).splitlines()[1])))
    assert cell == "'" + name
    assert csv_text(["n"], [["-3.5"], [-2.0], ["+5%"]]).splitlines()[1:] == ["-3.5", "-2.0", "+5%"]
