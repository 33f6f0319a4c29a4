"""The three commands through their main(argv): exit codes, messages (never a traceback), written files."""
import json
import re
import math
from pathlib import Path

import pytest

from pytest_genai.cli import main as pytest_genai_main
from pytest_genai.cli.report import compare_main, gate_main, report_main
from pytest_genai.results.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION

from .runfiles import bench, run_doc, write_run


def quant(name="test_q[cpu-real]", tps=1000.0, ppl=12.0, config=None, **kw):
    config = config or {"mode": "real", "bits": 8}
    return bench(name, "quant", config, {"tokens_per_s": tps, "perplexity": ppl}, **kw)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return write_run(tmp_path / "base.json", [quant()]), write_run(tmp_path / "cur.json", [quant(tps=400.0)])


def test_dispatch_through_the_pytest_genai_command(runs, capsys) -> None:
    base, cur = runs
    assert pytest_genai_main(["gate", str(base), str(cur)]) == EXIT_REGRESSION
    assert pytest_genai_main(["compare", str(base), str(cur)]) == EXIT_OK
    assert pytest_genai_main(["report", str(base)]) == EXIT_OK


def test_gate_regression_table_names_the_metric(runs, capsys, tmp_path: Path) -> None:
    base, cur = runs
    summary = tmp_path / "out" / "gate.md"
    assert gate_main([str(base), str(cur), "-o", str(summary)]) == EXIT_REGRESSION
    out = capsys.readouterr().out
    assert "**FAIL**: 1 failure(s)" in out
    assert ("| test_q[cpu-real] | cpu | tokens_per_s | dropped 60.00% (limit 5%, higher is better); point comparison: "
            "no rounds recorded in either run, so noise is not judged |") in re.sub(r" +", " ", out)
    assert summary.read_text() == out
    assert not list(summary.parent.glob(".*tmp"))  # atomic write left no temp file
    assert gate_main([str(base), str(cur), "--all"]) == EXIT_REGRESSION  # every row, with its status
    assert "REGRESSED" in capsys.readouterr().out


def test_gate_passes_and_thresholds_loosen(runs, capsys) -> None:
    base, cur = runs
    assert gate_main([str(base), str(base)]) == EXIT_OK
    assert "**PASS**" in capsys.readouterr().out
    assert gate_main([str(base), str(cur), "--max-regression", "tokens_per_s=70%"]) == EXIT_OK


def test_compare_prints_ratios_with_direction(runs, capsys) -> None:
    base, cur = runs
    assert compare_main([str(base), str(cur), "--all"]) == EXIT_OK
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "tokens_per_s" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:11] == ["1000", "400", "0.4x", "—", "-60.00%", "↑ higher", "5%", "point"]
    assert "↓ lower" in next(line for line in out.splitlines() if "perplexity" in line)


def test_bad_threshold_token_is_named(runs, capsys) -> None:
    base, cur = runs
    assert gate_main([str(base), str(cur), "--max-regression", "tokens_per_s=5"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "bad token 'tokens_per_s=5'" in err and "'tokens_per_s=5%'" in err and "Traceback" not in err


def _bad(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param('{"benchmarks": [{"name": "t", "extra', "truncated", id="truncated"),
        pytest.param("not json at all", "invalid JSON", id="not-json"),
        pytest.param(b"", "empty", id="empty-file"),
        pytest.param(json.dumps(run_doc([])), "contains no benchmarks", id="empty-run"),
        pytest.param(json.dumps({"benchmarks": [], "machine_info": {"genai": {"absent": {"hpu": "no habana"}}}}),
                     "hpu: no habana", id="empty-run-absent-device"),
        pytest.param(json.dumps(run_doc([quant(schema="pytest-genai/0")])), "reads 'pytest-genai/1'", id="old-contract"),
        pytest.param(json.dumps({"foo": 1}), "no 'benchmarks' list", id="not-benchmark-json"),
    ],
)
def test_each_bad_input_is_one_message_and_exit_2(tmp_path: Path, runs, capsys, content, expected: str) -> None:
    good, _ = runs
    bad = _bad(tmp_path, "bad.json", content)
    for main, argv in ((gate_main, [str(good), str(bad)]), (compare_main, [str(bad), str(good)]),
                       (report_main, [str(bad)])):
        assert main(argv) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert str(bad) in err and expected in err and "Traceback" not in err


def test_missing_file_and_bad_arguments(tmp_path: Path, runs, capsys) -> None:
    good, _ = runs
    assert gate_main([str(good), str(tmp_path / "nope.json")]) == EXIT_BAD_INPUT
    assert "no such file" in capsys.readouterr().err
    assert gate_main([str(good)]) == EXIT_BAD_INPUT  # argparse: missing CURRENT
    assert "usage: pytest-genai gate" in capsys.readouterr().err
    assert report_main(["--help"]) == EXIT_OK


def test_nothing_in_common_is_bad_input_for_gate(tmp_path: Path, capsys) -> None:
    a = write_run(tmp_path / "a.json", [quant()])
    b = write_run(tmp_path / "b.json", [bench("other", "dabench", {"hidden": 64}, {"efficiency": 0.5})])
    assert gate_main([str(a), str(b)]) == EXIT_BAD_INPUT
    assert "nothing to gate" in capsys.readouterr().err
    assert compare_main([str(a), str(b)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "baseline only" in out and "current only" in out


def test_one_sided_benchmarks_and_nan_values(tmp_path: Path, capsys) -> None:
    a = write_run(tmp_path / "a.json", [quant(), quant("test_q[cpu-fake]", config={"mode": "fake"})])
    b = write_run(tmp_path / "b.json", [quant(ppl=math.nan), bench("test_new", "quant", {"mode": "x"}, {})])
    assert gate_main([str(a), str(b)]) == EXIT_REGRESSION
    out = capsys.readouterr()
    assert "| test_q[cpu-real] | cpu | perplexity | current value is nan (baseline 12)" in re.sub(r" +", " ", out.out)
    assert re.search(r"\| test_q\[cpu-fake\] +\| cpu +\| \* +\| benchmark of the baseline missing", out.out)
    assert re.search(r"\| test_new +\| cpu +\| current only", out.out)
    assert "perplexity is nan (not finite)" in out.err


def test_report_writes_markdown_and_html(tmp_path: Path, capsys) -> None:
    claim = {"id": "A1.compression_ratio", "metric": "compression_ratio", "measured": 3.9, "min": 2.0, "max": 6.0,
             "paper": 5.93, "verdict": "pass", "message": "ok"}
    path = write_run(tmp_path / "out.json", [
        bench("test_q[cpu-fp32]", "quant", {"mode": "fp32", "task": "wikitext"},
              {"compression_ratio": 1.0, "perplexity": 14.9, "tokens_per_s": 1500.0}),
        bench("test_q[cpu-real]", "quant", {"mode": "real", "task": "wikitext"},
              {"compression_ratio": 3.9, "perplexity": 15.2, "tokens_per_s": 1100.0,
               "peak_bytes_modeled": 1e6}, sources={"peak_bytes_modeled": "modeled"}, claims=[claim]),
    ])
    md, html = tmp_path / "r" / "report.md", tmp_path / "r" / "report.html"
    assert report_main([str(path), "-o", str(md), "-o", str(html), "--plots", str(tmp_path / "r" / "plots")]) == 0
    text = re.sub(r" +", " ", md.read_text())  # columns are padded for terminals
    assert "| A1.compression_ratio | test_q[cpu-real] | cpu | 3.9 | [2, 6] | 5.93 | Paper A, A1 | pass |" in text
    assert "## Experiment: A1 quant — test_q" in text and "tokens_per_s [tokens/s]" in text and "| perplexity |" in text
    assert re.search(r"peak_bytes_modeled( \[\w+\])?[ |]", text) and "peak_bytes_modeled (modeled)" not in text and "Same in every row: device=cpu, model=tiny, task=wikitext" in text
    assert "![quant_perplexity_vs_compression](plots/quant_perplexity_vs_compression.png)" in text
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    assert 'src="plots' not in page and "<td class=\"num\">3.9</td>" in page


def test_report_without_matplotlib(tmp_path: Path, runs, capsys, monkeypatch) -> None:
    import sys

    for name in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # makes the import fail as if matplotlib were absent
    good, _ = runs
    assert report_main([str(good), "--plots", str(tmp_path / "p")]) == EXIT_BAD_INPUT
    assert "pip install 'pytest-genai[plot]'" in capsys.readouterr().err
    assert report_main([str(good), "-o", str(tmp_path / "r.html")]) == EXIT_OK  # HTML without plots, with a note
    assert "plots need matplotlib" in (tmp_path / "r.html").read_text()


def test_unwritable_output_is_a_message(tmp_path: Path, runs, capsys) -> None:
    good, _ = runs
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert report_main([str(good), "-o", str(blocker / "r.md")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err  # refused before reading, naming the file in the way
    assert f"{blocker} is a file, not a folder" in err and "Traceback" not in err


def test_gate_hardware_upgrade_checks_the_generation_claim(tmp_path: Path, capsys) -> None:
    def ft(gen: str, tps: float, strategy: str):
        entry = bench(f"test_ft[hpu-{strategy}]", "finetune", {"strategy": strategy}, {"tokens_per_s": tps},
                      device=("hpu", gen), model="llama-3.1-8b")
        # every timed step's tokens/s, as the suite's rows record them (a lone ratio would read inconclusive)
        entry["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": [tps * f for f in (0.995, 1.0, 1.005, 0.998,
                                                                                                1.002)]}
        return entry

    old = write_run(tmp_path / "gaudi.json", [ft("gaudi", 1000.0, "ddp"), ft("gaudi", 800.0, "fsdp")])
    new = write_run(tmp_path / "gaudi2.json", [ft("gaudi2", 2700.0, "ddp"), ft("gaudi2", 1900.0, "fsdp")])
    assert gate_main([str(old), str(new)]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "### Hardware-upgrade claims" in out
    assert "| A2.gen.gaudi_gaudi2 | test_ft[hpu-ddp] | gaudi → gaudi2 | tokens_per_s | 1000 | 2700 | 2.7x | [2.5, 3] |" in out
    assert "| test_ft[hpu-fsdp] | gaudi → gaudi2 | tokens_per_s | gaudi→gaudi2 speedup of tokens_per_s: claim A2.gen.gaudi_gaudi2: " \
           "measured 2.375, interval [" in out and "n=5) < min 2.5" in out
    assert gate_main([str(old), str(new), "--no-claims"]) == EXIT_OK  # gated as a software change: both got faster


def test_a_reader_that_has_gone_loses_stdout_only(tmp_path: Path) -> None:
    """``pytest-genai gate a b -o gate.md | head``: the closed pipe was "error: cannot write Broken pipe", exit 2,
    and the -o file was never written. Now the file is written and the gate's own exit code stands."""
    import os
    import subprocess
    import sys

    base = write_run(tmp_path / "base.json", [bench("a", metrics={"tokens_per_s": 100.0})])
    slower = write_run(tmp_path / "cur.json", [bench("a", metrics={"tokens_per_s": 40.0})])
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything was written
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_genai.cli", "gate", str(base), str(slower), "-o",
                               str(tmp_path / "gate.md")], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)
    assert done.returncode == EXIT_REGRESSION, done.stderr
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr
    assert "**FAIL**" in (tmp_path / "gate.md").read_text()
