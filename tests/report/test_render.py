"""Report content: claims table from recorded verdicts, experiment tables, Markdown and self-contained HTML."""
import gzip
import re
from pathlib import Path

import pytest

from pytest_genai.cli.report import report_main
from pytest_genai.results.registry import MetricInfo
from pytest_genai.report.render import Image, report_blocks, to_html, to_markdown
from pytest_genai.results.runs import run_from_json
from pytest_genai.tables import MAX_ROW_CHARS, distinct_parts, format_number, format_value
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
    assert table.headers == ("id", "achieved_tflops [TFLOP/s]", "flops_modeled", "bound")  # named so: no second mark
    assert table.rows[1] == ("L4", "0.06", "2,000,000,000", "compute")
    assert group.shared == "device=cpu, model=tiny, hidden=64, lr=0.0003"  # constant values, written as configured


def test_wide_results_split_into_tables_that_repeat_the_row_identity() -> None:
    devices = [("cpu", "cpu"), ("cuda", "h100-sxm")]
    recs = run_from_json(run_doc([bench(f"t[{k}]", "x", {"k": k}, {f"m{i:02d}": float(i + k) for i in range(19)},
                                        device=devices[k % 2]) for k in range(1, 8)]), "x").records
    (group,) = experiment_tables(recs, {})
    assert [len(t.headers) for t in group.tables] == [2 + 8, 2 + 8, 2 + 3]
    assert all(t.headers[:2] == ("device", "k") for t in group.tables)
    assert [t.rows[0][:2] for t in group.tables] == [("h100-sxm", "1")] * 3


def test_a_wide_table_is_split_by_width_and_a_metric_family_starts_a_new_table() -> None:
    metrics = {"tokens_per_s": 1.0, **{f"matmul_{name}_with_a_long_name": 2.0 for name in "abcde"}}
    recs = run_from_json(run_doc([bench(f"t[{k}]", "x", {"k": k}, {m: v * k for m, v in metrics.items()})
                                  for k in range(1, 8)]), "x").records
    (group,) = experiment_tables(recs, {})
    assert all(len(line) <= MAX_ROW_CHARS for t in group.tables for line in t.to_markdown().splitlines())
    assert [h for h in group.tables[0].headers] == ["k", "tokens_per_s"]  # matmul_* fit together on the next one
    assert all(h.startswith("matmul_") for t in group.tables[1:] for h in t.headers[1:])


def test_a_few_rows_with_many_metrics_are_turned_a_column_per_config() -> None:
    recs = run_from_json(run_doc([
        bench(f"t[{s}]", "x", {"strategy": s, "head_vocab": v, "id": f"{s}-L4-h128"},
              {f"metric_number_{i:02d}": float(i + v) for i in range(12)})
        for s, v in (("dp", 0), ("tp", 0), ("pp", 8192))]), "x").records
    (group,) = experiment_tables(recs, {})
    (table,) = group.tables
    # headed by what tells the configs apart (strategy; head_vocab follows from it and becomes a row)
    assert table.headers == ("strategy", "dp", "tp", "pp")
    assert table.rows[0] == ("head_vocab", "0", "0", "8192")
    assert table.rows[1] == ("metric_number_00", "0", "0", "8192")


def test_a_turned_table_shows_each_config_row_once() -> None:
    """Without config ids the varying keys came back as value columns: workload and head_vocab twice each (as in
    every CPU run's Level 2 scaling table)."""
    recs = run_from_json(run_doc([
        bench(f"t[{s}]", "x", {"strategy": s, "workload": w, "head_vocab": v},
              {f"metric_number_{i:02d}": float(i + v) for i in range(12)})
        for s, w, v in (("dp", "L4", 0), ("tp", "L4", 0), ("pp", "L8", 8192))]), "x").records
    (group,) = experiment_tables(recs, {})
    (table,) = group.tables
    firsts = [row[0] for row in table.rows]
    assert table.headers[0] == "strategy" and len(firsts) == len(set(firsts)), firsts
    assert {"workload", "head_vocab"} <= set(firsts)


def test_one_benchmark_is_a_metric_value_table() -> None:
    recs = run_from_json(run_doc([bench("t[cpu]", "x", {"k": 1}, {"a": 1.0, "b": 20_000.0, "c": 0.5})]), "x").records
    (group,) = experiment_tables(recs, {})
    assert group.tables[0].headers == ("metric", "value")
    assert group.tables[0].rows == (("a", "1"), ("b", "20,000"), ("c", "0.5"))


def test_values_every_row_shares_are_said_once_and_flags_read_yes_no() -> None:
    recs = run_from_json(run_doc([
        bench(f"l1[{k}]", "dabench", {"layers": k, "causal": True, "workload": {"id": "L2-h64", "hidden": 64},
                                      "data_source": "/work/shared/data/wikitext-2-raw-v1/test.raw"},
              {"tokens_per_s": 100.0 * k, "ceiling_gbs_measured": 22.71, "matmul_compute_bound_modeled": float(k % 2)},
              units={"ceiling_gbs_measured": "GB/s"}) for k in (1, 2, 3)]), "x").records
    (group,) = experiment_tables(recs, {})
    assert "causal=yes" in group.shared and "workload=L2-h64" in group.shared  # a nested config by its id
    assert "/work" not in group.shared and "test.raw" in group.shared  # never a local path
    assert group.constant == "ceiling_gbs_measured=22.71\u00a0GB/s"
    (table,) = group.tables
    assert [row[-1] for row in table.rows] == ["yes", "no", "yes"]


@pytest.mark.parametrize("value, text", [
    (True, "yes"), (None, "none"), (3e-4, "0.0003"), (["bf16", "int8"], "bf16/int8"), ([1, 2, 4], "[1,2,4]"),
    ({"id": "L4-h128", "layers": 4}, "L4-h128"), ("/home/u/.cache/x/model-v2-abc", "model-v2-abc"),
    ("C:\\data\\boolq\\val.jsonl", "val.jsonl"), ("hub:Salesforce/wikitext", "hub:Salesforce/wikitext"),
    ("x" * 50, "x" * 26 + "…" + "x" * 13),
])
def test_config_values_are_short_and_never_local_paths(value, text) -> None:
    assert format_value(value) == text


@pytest.mark.parametrize("number, text", [(1.413e-4, "0.0001413"), (5e-5, "5.000e-05"), (0.001885, "0.001885"),
                                          (12_345.6, "12,346"), (123_456_789, "123,456,789"), (9999, "9999"),
                                          (True, "yes"), (False, "no"), (2.0, "2")])
def test_numbers_have_four_significant_digits_and_separators(number, text) -> None:
    assert format_number(number) == text


def test_ids_drop_the_parts_all_of_them_share() -> None:
    names = ["smollm2-135m-cpu-real-wikitext", "smollm2-135m-cpu-fake-boolq"]
    assert distinct_parts(names) == ["real-wikitext", "fake-boolq"]
    assert distinct_parts(["cpu-dp", "cpu-tp"]) == ["dp", "tp"]
    assert distinct_parts(["a-b", "a-b"]) == ["a-b", "a-b"] and distinct_parts(["x"]) == ["x"]


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
    assert "are computed from a model of the hardware" in md
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


REALISTIC_RUN = Path(__file__).parent / "realistic_run.json.gz"
"""The CPU reference run of this suite (docs/results/2026-11-30-cpu-amd-epyc-2vcpu/out.json: the README's main job,
45 benchmarks of all experiments; per-round data and attachments dropped), gzipped."""


def realistic_run(tmp_path: Path) -> Path:
    path = tmp_path / "out.json"
    path.write_bytes(gzip.decompress(REALISTIC_RUN.read_bytes()))
    return path


def test_the_report_of_a_realistic_run_has_short_rows_and_no_local_path(tmp_path: Path) -> None:
    run = realistic_run(tmp_path)
    assert "/pytest_genai/evals/embedded/" in run.read_text()  # the run records where its data and model were...
    md, page = tmp_path / "report.md", tmp_path / "report.html"
    assert report_main([str(run), "-o", str(md), "-o", str(page)]) == 0
    text = md.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) > 300 and max(len(line) for line in lines) <= MAX_ROW_CHARS
    for rendered in (text, page.read_text(encoding="utf-8")):  # ...the report never shows it
        assert not re.findall(r"(?:^|[\s=(\[|,>])(~?/[\w.-]+/)", rendered, re.M)
        assert "/root/" not in rendered and "/work/" not in rendered
    assert re.search(r"\bcompute_bound_modeled=yes", text) and "_modeled (modeled)" not in text  # flags read yes/no; an old run read under the new name
    assert not re.search(r"=(None|True|False)\b|\| (True|False) ", text)
    # the A1 rows are named by the config values that vary (mode, precision, sparsity, backend, task), not by ids
    header = next(line for line in lines if line.startswith("| backend ") and "| mode |" in line)
    assert "| precision " in header and "| sparsity |" in header and "| task " in header and "| id " not in header


def test_claims_table_values_carry_their_source_and_interval() -> None:
    """A modeled value sat under a "measured" heading, and an inconclusive verdict showed no interval (a value inside
    its bound read inconclusive with no reason in sight)."""
    from pytest_genai.report.views import claims_tables

    modeled = {"id": "B1.capacity_model_agreement", "metric": "max_layers_modeled_over_measured", "measured": 0.95,
               "min": 0.85, "max": 1.15, "paper": None, "verdict": "pass", "message": "ok"}
    drop = {"id": "A1.boolq_acc_drop", "metric": "acc_drop", "measured": 0.0, "min": None, "max": 0.02,
            "paper": None, "verdict": "inconclusive", "message": "straddles",
            "interval": {"lo": -0.1038, "hi": 0.1038, "level": 0.95, "n": 40, "method": "mcnemar"}}
    records = run_from_json(run_doc([
        bench("test_capacity_cpu", "dabench", {"id": "c"}, {"max_layers_modeled_over_measured": 0.95},
              sources={"max_layers_modeled_over_measured": "modeled"}, claims=[modeled]),
        bench("test_q[real-boolq]", "quant", {"task": "boolq"}, {"acc_drop": 0.0}, claims=[drop]),
    ]), "x").records
    rows = {row[0]: row for _, table in claims_tables(records) for row in table.rows}
    assert rows["B1.capacity_model_agreement"][3] == "0.95"  # its name says modeled: no second mark
    assert rows["A1.boolq_acc_drop"][3] == "0 [-0.1038, 0.1038]"
    relabelled = dict(modeled, metric="agreement")
    records = run_from_json(run_doc([bench("test_capacity_cpu", "dabench", {"id": "c"}, {"agreement": 0.95},
                                           sources={"agreement": "modeled"}, claims=[relabelled])]), "x").records
    assert claims_tables(records)[0][1].rows[0][3] == "0.95 (modeled)"


def test_shortened_benchmark_names_in_a_claims_table_stay_distinct() -> None:
    """The cut in the middle removed exactly the part that differed (attn_fused vs attn_unfused): two rows, one pass
    and one fail, under one name."""
    from pytest_genai.tables import shorten_unique
    from pytest_genai.report.views import claims_tables

    names = [f"llama-3.1-8b@tiny-random-ddp-attn_{a}-fp32-mb2-s128-lora_r8a16_qkvo_d0.05-{x}"
             for a in ("fused", "unfused") for x in ("cpu",)]
    assert len(set(shorten_unique(names, 30))) == 2 and all(len(x) <= 30 for x in shorten_unique(names, 30))
    verdict = lambda v: {"id": "A2.flash_attention_cpu", "metric": "flash_attention_speedup", "measured": 1.0,  # noqa: E731
                         "min": 1.0, "max": None, "paper": 1.2, "verdict": v, "message": "m"}
    middle = "-tiny-random-ddp-with-a-long-common-stretch-of-config-text-attn_{}-fp32-mb2-s128-and-more-common-text-"
    rows = [("llama-3.1-8b", "fused", "cpu", "pass"), ("llama-3.1-8b", "unfused", "cpu", "fail"),
            ("gemma-2-27b", "unfused", "cuda", "pass")]
    records = run_from_json(run_doc([
        bench(f"test_ft[{model}{middle.format(a)}{end}]", "finetune", {"model": model, "attention": a, "end": end},
              {"flash_attention_speedup": 1.0}, claims=[verdict(v)]) for model, a, end, v in rows
    ]), "x").records
    (_, table), = claims_tables(records)
    labels = [row[1] for row in table.rows]
    assert len(set(labels)) == 3, labels


@pytest.mark.parametrize("breaker", ["\r\n", "\r", "\n", "\u2028"])
def test_a_line_break_of_any_kind_in_a_cell_stays_in_its_row(breaker) -> None:
    """Only "\\n" was replaced: a "\\r" in a label split the Markdown row in two in CommonMark renderers."""
    from pytest_genai.tables import make_table

    md = make_table(["a", "b"], [[f"mem|ory{breaker}x", "1"]], [False, True]).to_markdown()
    assert len(md.splitlines()) == 3 and not re.search(r"[\r\u2028]", md) and "mem\\|ory x" in md


def test_plot_links_with_spaces_or_parentheses_stay_one_link(tmp_path: Path) -> None:
    """``--plots "my plots (v1)"`` wrote ``![x](my plots (v1)/x.png)``, which CommonMark does not read as a link."""
    png = tmp_path / "my plots (v1)" / "x.png"
    md = to_markdown([Image(png, "x")], tmp_path)
    assert md.strip() == "![x](<my plots (v1)/x.png>)"
    plain = to_markdown([Image(tmp_path / "plots" / "x.png", "x")], tmp_path)
    assert plain.strip() == "![x](plots/x.png)"


def test_rows_sharing_a_config_id_are_named_by_the_keys_that_differ() -> None:
    """Two configs with id "small" (dtype fp32 and bf16) were rows "small | 10" and "small | 20", dtype nowhere."""
    recs = run_from_json(run_doc([
        bench(f"t[{d}]", "x", {"id": "small", "dtype": d, "layers": 2}, {"tokens_per_s": v})
        for d, v in (("fp32", 10.0), ("bf16", 20.0))]), "x").records
    (group,) = experiment_tables(recs, {})
    (table,) = group.tables
    assert "dtype" in table.headers and {row[table.headers.index("dtype")] for row in table.rows} == {"fp32", "bf16"}


def test_shortened_names_keep_the_parts_that_differ_between_rows() -> None:
    """`gemma-2-27b@tiny-random-f…fp32-mb2-s128`: the cut in the middle hid the strategy; the parts every row shares
    (`tiny`, `random`, `fp32-mb2-s128`) go first."""
    from pytest_genai.tables import shorten, shorten_unique

    names = [f"{m}@tiny-random-{s}-attn_{a}-fp32-mb2-s128{lora}"
             for m, s, a, lora in [("gemma-2-27b", "ddp", "unfused", ""), ("gemma-2-27b", "fsdp", "unfused", ""),
                                   ("gemma-2-27b", "zero3", "unfused", "-lora_r8a16_qkvo_d0.05"),
                                   ("llama-3.1-8b", "ddp", "fused", "")]]
    short = shorten_unique(names, 54)
    assert all(len(x) <= 54 for x in short), short
    for label, (model, strategy, attn) in zip(short, [("gemma-2-27b", "ddp", "unfused"),
                                                      ("gemma-2-27b", "fsdp", "unfused"),
                                                      ("gemma-2-27b", "zero3", "unfused"),
                                                      ("llama-3.1-8b", "ddp", "fused")]):
        assert label.startswith(model) and f"-{strategy}-" in label and f"_{attn}" in label, short
    assert "lora" in short[2]
    assert shorten_unique(["only-one-name-" * 5], 20) == [shorten("only-one-name-" * 5, 20)]


def test_a_metric_beside_its_modeled_namesake_says_what_it_counts() -> None:
    """`elementwise_flops=0 FLOP` beside `elementwise_flops_modeled 1,032,192`: which one was the real count?"""
    recs = run_from_json(run_doc([
        bench(f"l1[{k}]", "dabench", {"layers": k},
              {"tokens_per_s": 100.0 * k, "elementwise_flops": 0.0, "elementwise_flops_modeled": 1000.0 * k},
              units={"elementwise_flops": "FLOP", "elementwise_flops_modeled": "FLOP"},
              sources={"elementwise_flops": "measured", "elementwise_flops_modeled": "modeled"}) for k in (1, 2, 3)]),
        "x").records
    (group,) = experiment_tables(recs, {})
    assert group.constant == "elementwise_flops=0\u00a0FLOP\u00a0(measured: matrix products only)"
    assert "elementwise_flops_modeled [FLOP]" in group.tables[0].headers
