"""The report's first screen, on the CPU reference run (realistic_run.json.gz): where it ran (device, torch, commit,
load), then per paper its claims' verdicts, with not_applicable checks folded into a count; plots say in their title
what ran (device, model, scale, random weights)."""
import json
from pathlib import Path

from pytest_genai.cli.report import report_main
from pytest_genai.report.plots import plot_context
from pytest_genai.results.runs import run_from_json

from .runfiles import bench, run_doc
from .test_render import realistic_run


def test_the_first_screen_says_where_it_ran_then_each_papers_verdicts(tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    assert report_main([str(realistic_run(tmp_path)), "-o", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    head = text[:text.index("## Claims\n")]  # everything above the per-test claim tables
    for row in ("| devices | AMD EPYC (cpu)", "| torch   | 2.13.0+cpu", "| commit  | 5483d6a81515 on main",
                "| load    | not measured"):
        assert row in head, row
    assert head.index("Paper A:") < head.index("Paper B:")
    assert "| A1.ppl_ratio " in head and "12.39 vs 12.02" in head  # the paper's own words beside its verdicts
    assert "35 not_applicable checks not shown" in head
    assert "not_applicable" not in text[text.index("## Claims\n"):text.index("## Experiment")]  # folded away


def test_the_load_row_reads_the_benchmarks_stall_shares() -> None:
    def run(*shares):
        benches = [bench(f"test_t[{i}]", metrics={"x": 1.0}) for i in range(len(shares))]
        for b, share in zip(benches, shares):
            b["extra_info"]["genai"]["attachments"]["cpu_contention"] = {"stall_share_measured": share}
        return run_from_json(json.loads(json.dumps(run_doc(benches))), "r.json")

    from pytest_genai.report.views import machine_table

    load = lambda r: dict(machine_table(r).rows)["load"]  # noqa: E731
    assert load(run(0.05, 0.12)) == "CPU stall share idle: at most 12% (under 30%) in 2 benchmarks"
    assert load(run(0.46, 0.98, 0.1)).startswith("CPU stall share 2 of 3 benchmarks past 30% (46%-98%)")


def test_a_plots_context_names_device_model_scale_and_random_weights() -> None:
    doc = run_doc([bench("test_f[a]", metrics={"tokens_per_s": 1.0}, config={"scale": "tiny", "weights": "random"},
                         model="llama-3.1-8b"),
                   bench("test_f[b]", metrics={"tokens_per_s": 2.0}, config={"scale": "tiny", "weights": "random"},
                         model="gemma-2-27b")])
    recs = run_from_json(doc, "r.json").records
    context = plot_context(recs)
    assert context.startswith("on ") and "models llama-3.1-8b, gemma-2-27b (tiny, random weights)" in context


def test_the_first_screen_says_what_could_not_be_decided_and_why(tmp_path: Path) -> None:
    """`inconclusive 2` in the per-paper table, and the reason only far below in each benchmark's claim rows."""
    md = tmp_path / "report.md"
    assert report_main([str(realistic_run(tmp_path)), "-o", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    head = " ".join(text[:text.index("## Claims\n")].split())
    assert ("Not decided (inconclusive): A1.boolq_acc_drop (2 benchmarks): measured 0, 95% interval \\[-0.1038, "
            "0.1038] (n=40) straddles ≤ 0.02; A1.hellaswag_acc_drop (2 benchmarks)") in head, head[-600:]


def test_an_undecided_claim_without_an_interval_gives_its_checks_words() -> None:
    from pytest_genai.report.views import undecided_reasons

    b = bench("test_t[a]", metrics={"x": 1.0}, claims=[{"id": "B2.x", "verdict": "inconclusive", "metric": "x",
                                                          "message": "claim B2.x: 46% CPU stall: a timing verdict "
                                                                     "under contention is inconclusive"}])
    recs = run_from_json(json.loads(json.dumps(run_doc([b]))), "r.json").records
    assert undecided_reasons(recs) == ["B2.x: 46% CPU stall: a timing verdict under contention is inconclusive"]
