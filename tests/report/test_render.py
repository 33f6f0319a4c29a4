"""Report content: claims table from recorded verdicts, experiment tables, Markdown and self-contained HTML."""
import re
from pathlib import Path

from pytest_genai.report.registry import MetricInfo
from pytest_genai.report.render import Image, report_blocks, to_html, to_markdown
from pytest_genai.report.runs import run_from_json
from pytest_genai.report.views import experiment_tables

from .runfiles import bench, run_doc

INFO = {"achieved_tflops": MetricInfo("achieved_tflops", "TFLOP/s", "higher")}


def squash(text: str) -> str:
    return re.sub(r" +", " ", text)


def dabench_run():
    verdict = {"id": "B1.cpu.li", "metric": "load_imbalance", "measured": 0.97, "min": 0.9, "max": None,
               "paper": None, "verdict": "pass", "message": "ok"}
    return run_from_json(run_doc([
        bench("l1[cpu-L2]", "dabench", {"layers": 2, "hidden": 64, "lr": 3e-4, "id": "L2"},
              {"achieved_tflops": 0.05, "flops_modeled": 1e9}, sources={"flops_modeled": "modeled"},
              labels={"bound": "memory", "work_counts": "analytic (pytest_genai.dabench.counts): long text"},
              claims=[verdict]),
        bench("l1[cpu-L4]", "dabench", {"layers": 4, "hidden": 64, "lr": 3e-4, "id": "L4"},
              {"achieved_tflops": 0.06, "flops_modeled": 2e9}, sources={"flops_modeled": "modeled"},
              labels={"bound": "compute"}),
    ]), "out.json")


def test_experiment_table_rows_are_configs_and_headers_carry_units() -> None:
    (group,) = experiment_tables(dabench_run().records, INFO)
    assert (group.experiment, group.test) == ("dabench", "l1")
    (table,) = group.tables
    # the config id names each row; short labels are columns, long descriptive ones are not
    assert table.headers == ("id", "achieved_tflops [TFLOP/s]", "flops_modeled (modeled)", "bound")
    assert table.rows[1] == ("L4", "0.06", "2,000,000,000", "compute")
    assert group.shared == "device=cpu, model=tiny, hidden=64, lr=0.0003"  # constant values, written as configured


def test_wide_results_split_into_tables_that_repeat_the_row_identity() -> None:
    metrics = {f"m{i:02d}": float(i) for i in range(19)}
    recs = run_from_json(run_doc([bench("t[a]", "x", {"k": 1}, metrics, device=("cpu", "cpu")),
                                  bench("t[b]", "x", {"k": 2}, metrics, device=("cuda", "h100-sxm"))]), "x").records
    (group,) = experiment_tables(recs, {})
    assert [len(t.headers) for t in group.tables] == [2 + 8, 2 + 8, 2 + 3]
    assert all(t.headers[:2] == ("device", "k") for t in group.tables)
    assert [t.rows[1][:2] for t in group.tables] == [("h100-sxm", "2")] * 3


def test_tests_of_one_experiment_get_their_own_tables() -> None:
    recs = run_from_json(run_doc([bench("test_a[1]", "dab", {"k": 1}, {"x": 1.0}),
                                  bench("test_b", "dab", {"k": 1}, {"y": 2.0})]), "x").records
    groups = experiment_tables(recs, {})
    assert [(g.test, g.tables[0].headers) for g in groups] == [("test_a", ("benchmark", "x")),
                                                             ("test_b", ("benchmark", "y"))]


def test_markdown_report_reads_as_a_ci_comment(tmp_path: Path) -> None:
    png = tmp_path / "plots" / "roofline_cpu.png"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    blocks = report_blocks(dabench_run(), INFO, {}, [png])
    md = squash(to_markdown(blocks, tmp_path))
    assert md.startswith("# pytest-genai report — out.json\n\n2 benchmarks · experiments: dabench (2) · devices: cpu · "
                         "claims: 1 pass")
    assert "| B1.cpu.li | l1[cpu-L2] | cpu | 0.97 | ≥ 0.9 | — |" in md
    assert "(modeled) are computed from a model" in md
    assert md.rstrip().endswith("![roofline_cpu](plots/roofline_cpu.png)")


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    page = to_html(report_blocks(dabench_run(), INFO, {}, [png], notes=["<script>alert(1)</script>"]))
    assert "data:image/png;base64,iVBORw0KGgpmYWtl" in page and "a.png" not in page.replace('alt="a"', "")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert re.search(r"<title>pytest-genai report — out.json</title>", page)
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing fetched from elsewhere


def test_image_block_paths_stay_relative_to_the_markdown_file(tmp_path: Path) -> None:
    img = Image(tmp_path / "deep" / "x.png", "x")
    assert to_markdown([img], tmp_path / "other") == "![x](../deep/x.png)\n"
