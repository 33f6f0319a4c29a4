"""Table layout and number formats, and that the report package imports nothing heavy."""
import subprocess
import sys

import pytest

from pytest_genai.tables import Table, format_change, format_number, make_table, text_table


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "—"), (0, "0"), (1000, "1000"), (1000.0, "1000"), (34081, "34,081"), (34081.4, "34,081"), (12.3949, "12.39"), (0.9612, "0.9612"),
     (1.5e-5, "1.500e-05"), (2e16, "2.000e+16"), (float("nan"), "nan"), (float("-inf"), "-inf"), ("ddp", "ddp")],
)
def test_format_number(value, text: str) -> None:
    assert format_number(value) == text


def test_format_change() -> None:
    assert format_change(-0.4) == "-40.00%" and format_change(0.0031) == "+0.31%"
    assert format_change(None) == "—" and format_change(float("inf")) == "+inf"


def test_markdown_escapes_pipes_and_aligns_numbers() -> None:
    table = make_table(["name", "value"], [["a|b", 1.5], ["c", 12000]], [False, True])
    assert table.to_markdown().splitlines() == [
        "| name | value  |",
        "| ---- | -----: |",
        "| a\\|b |    1.5 |",
        "| c    | 12,000 |",
    ]


def test_html_escapes_cells() -> None:
    html = make_table(["<x>"], [["a & <b>"]]).to_html()
    assert "<th>&lt;x&gt;</th>" in html and "<td>a &amp; &lt;b&gt;</td>" in html


def test_text_table_pads_left_aligned_columns_two_spaces_apart() -> None:
    """The terminal layout (closing tables, `pytest-genai claims` / `devices`): cells as given, None empty."""
    assert text_table(["claim", "n"], [["A1.x|y", 3], [None, "12345"]]) == [
        "claim   n    ",
        "------  -----",
        "A1.x|y  3    ",
        "        12345",
    ]
    assert text_table(["a", "bb"], []) == ["a  bb", "-  --"]


def test_ragged_rows_are_rejected() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 headers"):
        Table(("a", "b"), (("x",),))


def test_importing_the_report_commands_imports_nothing_heavy() -> None:
    code = ("import sys, pytest_genai.cli.report, pytest_genai.plugin.baseline, pytest_genai.report.plots; "
            "heavy = [m for m in ('torch', 'matplotlib', 'transformers') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_modeled_mark_only_where_the_name_does_not_say_it():
    from pytest_genai.tables import modeled_mark

    assert modeled_mark("bytes_moved", "modeled") == " (modeled)"
    assert modeled_mark("bytes_moved_modeled", "modeled") == ""
    assert modeled_mark("predicted_compression_ratio", "modeled") == ""
    assert modeled_mark("tokens_per_s", "measured") == modeled_mark("tokens_per_s", None) == ""
