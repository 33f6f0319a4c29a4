"""The compare/gate cases that used to pass silently or crash (docs/reliability.md lists each with its test)."""
from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path

import pytest

from pytest_genai.cli.report import compare_main, gate_main, report_main
from pytest_genai.report.compare import (
    BASELINE_UNUSABLE, NOT_FINITE, NO_DIRECTION, REGRESSED, UNREGISTERED, compare_metric,
)
from pytest_genai.results.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION
from pytest_genai.plugin.baseline import BaselinePlugin
from pytest_genai.results.registry import MetricInfo
from pytest_genai.results.runs import load_run
from pytest_genai.report.thresholds import ThresholdError, parse_thresholds

from .runfiles import bench, run_doc, write_run

TPS = MetricInfo("tokens_per_s", "tokens/s", "higher")


def quant(name: str = "test_q[cpu-real]", tps: float = 1000.0, ppl: float = 12.0, config=None, **kw):
    return bench(name, "quant", config or {"mode": "real", "bits": 8}, {"tokens_per_s": tps, "perplexity": ppl}, **kw)


def one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1, err
    assert "error:" in lines[0] and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- 1. duplicate keys within one run ---------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["baseline", "current"])
def test_duplicate_keys_in_one_run_are_bad_input_naming_both_benchmarks(tmp_path: Path, capsys, side: str) -> None:
    # same experiment, config, model and device under two names: no pairing of them means anything
    dup = write_run(tmp_path / "dup.json", [quant("test_q[first]"), quant("test_q[second]", tps=10.0)])
    good = write_run(tmp_path / "good.json", [quant()])
    argv = [str(dup), str(good)] if side == "baseline" else [str(good), str(dup)]
    for main in (gate_main, compare_main):
        assert main(argv) == EXIT_BAD_INPUT
        one_line_error(capsys, str(dup), "'test_q[first]' (benchmarks/test_x.py::test_q[first])",
                       "'test_q[second]' (benchmarks/test_x.py::test_q[second])", "cannot be paired")


def test_same_key_on_two_devices_is_not_a_duplicate(tmp_path: Path, capsys) -> None:
    runs = [quant("q[cpu]", device=("cpu", "cpu")), quant("q[cuda]", device=("cuda", "h100-sxm"))]
    a, b = write_run(tmp_path / "a.json", runs), write_run(tmp_path / "b.json", runs)
    assert gate_main([str(a), str(b)]) == EXIT_OK
    assert "2 benchmark(s) compared, 0 unmatched" in capsys.readouterr().out


def test_inline_baseline_with_duplicates_is_a_usage_error(tmp_path: Path) -> None:
    dup = write_run(tmp_path / "dup.json", [quant("test_q[first]"), quant("test_q[second]")])
    with pytest.raises(pytest.UsageError, match=r"--genai-baseline: .*dup\.json: benchmarks 'test_q\[first\]'"):
        BaselinePlugin(None, str(dup), None, {"tokens_per_s": TPS})  # type: ignore[arg-type]


# --- 2. nan/inf ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("current", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("baseline", [100.0, math.nan, math.inf, None])
def test_nonfinite_current_of_a_gated_metric_fails_whatever_the_baseline(baseline, current) -> None:
    mc = compare_metric("tokens_per_s", baseline, current, TPS, 0.05)
    assert mc.status == NOT_FINITE and mc.gated


@pytest.mark.parametrize("baseline", [math.nan, math.inf])
def test_nonfinite_baseline_is_unusable_and_not_gated(baseline) -> None:
    mc = compare_metric("tokens_per_s", baseline, 100.0, TPS, 0.05)
    assert mc.status == BASELINE_UNUSABLE and not mc.gated and mc.max_regression is None


def test_nonfinite_values_of_ungated_metrics_do_not_fail() -> None:
    assert compare_metric("bound", math.nan, math.nan, MetricInfo("bound", "1", "none"), 0.05).status == NO_DIRECTION
    assert compare_metric("odd", 1.0, math.inf, None, 0.05).status == UNREGISTERED
    assert compare_metric("tokens_per_s", 100.0, 10.0, TPS, 0.05).status == REGRESSED


def test_gate_fails_nan_current_against_nan_baseline_and_counts_unusable_baselines(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant(tps=math.nan, ppl=math.inf)])
    cur = write_run(tmp_path / "cur.json", [quant(tps=math.nan, ppl=12.0)])
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| test_q[cpu-real] | cpu | tokens_per_s | current value is nan (baseline nan) |" in out
    assert "| perplexity | inf | 12 | — | — | — | ↓ lower | — | — | baseline unusable |" in out
    # tokens_per_s (not finite) is gated; perplexity with an unusable baseline is not
    assert "1 gated metric value(s): 0 regressed, 1 not finite" in out
    assert "1 baseline value(s) unusable (nan/inf, not gated)" in out
    fine = write_run(tmp_path / "fine.json", [quant(tps=1000.0, ppl=12.0)])
    assert gate_main([str(base), str(fine)]) == EXIT_OK  # nothing to compare with is not a pass of 2 values
    assert "**PASS**: 1 benchmark(s) compared, 0 unmatched; 0 gated metric value(s)" in capsys.readouterr().out


# --- 3. unknown names in --max-regression; field:N% -------------------------------------------------------------

@pytest.mark.parametrize(("spec", "bad"), [
    ("tokens_per_sec=5%", "unknown metric 'tokens_per_sec' in 'tokens_per_sec' (did you mean 'tokens_per_s'?)"),
    ("qaunt:tokens_per_s=5%", "unknown experiment 'qaunt' in 'qaunt:tokens_per_s' (did you mean 'quant'?)"),
    ("qaunt:*=5%", "unknown experiment 'qaunt'"),
    ("quant:perplexty=1%", "unknown metric 'perplexty'"),
])
def test_unknown_threshold_names_are_bad_input_listing_known_metrics(tmp_path: Path, capsys, spec, bad) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    cur = write_run(tmp_path / "cur.json", [quant(tps=10.0)])
    for main in (gate_main, compare_main):
        assert main([str(base), str(cur), "--max-regression", spec]) == EXIT_BAD_INPUT
        line = one_line_error(capsys, "--max-regression", bad, "known metrics:")
        known = line.split("known metrics: ", 1)[1]
        assert "tokens_per_s" in known and "perplexity" in known and "benchmark_median_s" in known


def test_a_misspelled_compare_metric_is_bad_input_not_an_empty_table(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    assert compare_main([str(base), str(base), "--metric", "tokens_pr_s"]) == EXIT_BAD_INPUT
    one_line_error(capsys, "--metric", "unknown metric 'tokens_pr_s' (did you mean 'tokens_per_s'?)")
    assert compare_main([str(base), str(base), "--metric", "acc"]) == EXIT_OK  # a registry metric these runs lack
    assert "No metric to show." in capsys.readouterr().out


def test_threshold_names_from_the_registry_or_the_runs_are_known(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    # acc is in the registry, finetune in the claims data, neither in these runs: a CI-wide spec stays valid
    spec = "acc=1%,finetune:*=20%,quant:perplexity=1%,*=10%"
    assert gate_main([str(base), str(base), "--max-regression", spec]) == EXIT_OK


def test_pytest_benchmark_field_colon_percent_syntax(tmp_path: Path, capsys) -> None:
    t = parse_thresholds("tokens_per_s:5%, quant:acc=1%")
    assert t.for_metric("tokens_per_s") == pytest.approx(0.05) and t.for_metric("acc", "quant") == pytest.approx(0.01)
    assert t.id == "tokens_per_s=5%,quant:acc=1%"
    with pytest.raises(ThresholdError, match="given twice"):
        parse_thresholds("tokens_per_s:5%,tokens_per_s=3%")
    with pytest.raises(ThresholdError, match="expected KEY=N%"):
        parse_thresholds("tokens_per_s:0.05")  # pytest-benchmark's absolute form: not a percentage
    base = write_run(tmp_path / "base.json", [quant()])
    cur = write_run(tmp_path / "cur.json", [quant(tps=400.0)])
    assert gate_main([str(base), str(cur), "--max-regression", "tokens_per_s:70%"]) == EXIT_OK
    assert gate_main([str(base), str(cur), "--max-regression", "tokens_per_s:30%"]) == EXIT_REGRESSION


def test_inline_unknown_threshold_name_is_a_usage_error(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    with pytest.raises(pytest.UsageError, match="--genai-max-regression: unknown metric 'tokens_per_sec'"):
        BaselinePlugin(None, str(base), "tokens_per_sec=5%", {"tokens_per_s": TPS})  # type: ignore[arg-type]


# --- 4. baseline benchmarks missing from the current run --------------------------------------------------------

def test_gate_fails_on_a_missing_baseline_benchmark_unless_allowed(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant(), quant("test_q[cpu-fake]", config={"mode": "fake"})])
    cur = write_run(tmp_path / "cur.json", [quant(), quant("test_q[cpu-new]", config={"mode": "new"})])
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| test_q[cpu-fake] | cpu | * | benchmark of the baseline missing from the current run" in out
    assert "1 benchmark(s) compared, 2 unmatched (1 baseline only, 1 current only)" in out
    assert gate_main([str(base), str(cur), "--allow-missing"]) == EXIT_OK
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| test_q[cpu-fake] | cpu | baseline only |" in out and "| test_q[cpu-new] | cpu | current only |" in out
    assert "**PASS**: 1 benchmark(s) compared, 2 unmatched (1 baseline only, 1 current only)" in out


def test_new_benchmarks_in_the_current_run_do_not_fail_the_gate(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    cur = write_run(tmp_path / "cur.json", [quant(), quant("test_q[cpu-new]", config={"mode": "new"})])
    assert gate_main([str(base), str(cur)]) == EXIT_OK


# --- 5. outputs: never an input, atomic, modes kept -------------------------------------------------------------

def _aliases(tmp_path: Path, target: Path) -> dict[str, Path]:
    link = tmp_path / "link.json"
    link.symlink_to(target)
    hard = tmp_path / "hard.json"
    os.link(target, hard)
    (tmp_path / "sub").mkdir()
    return {"same": target, "dotted": tmp_path / "sub" / ".." / target.name, "symlink": link, "hardlink": hard}


@pytest.mark.parametrize("alias", ["same", "dotted", "symlink", "hardlink"])
def test_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path: Path, capsys, alias: str) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    cur = write_run(tmp_path / "cur.json", [quant(tps=600.0)])
    before = cur.read_bytes()
    out = _aliases(tmp_path, cur)[alias]
    for main, argv in ((gate_main, [str(base), str(cur)]), (compare_main, [str(base), str(cur)]),
                       (report_main, [str(cur)])):
        assert main([*argv, "-o", str(tmp_path / "fine.md"), "-o", str(out)]) == EXIT_BAD_INPUT
        one_line_error(capsys, f"-o {out}: is the input file")
        assert cur.read_bytes() == before and not (tmp_path / "fine.md").exists()


def test_output_path_errors_name_the_users_path_not_the_temp_file(tmp_path: Path, capsys, monkeypatch) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "afile").write_text("x")
    for main, argv in ((gate_main, [str(base), str(base)]), (compare_main, [str(base), str(base)]),
                       (report_main, [str(base)])):
        assert main([*argv, "-o", str(folder)]) == EXIT_BAD_INPUT  # refused before anything is printed
        line = one_line_error(capsys, f"-o {folder}: is a folder; give a file path")
        assert ".tmp" not in line
        assert main([*argv, "-o", str(tmp_path / "afile" / "r.md")]) == EXIT_BAD_INPUT
        one_line_error(capsys, f"{tmp_path / 'afile'} is a file, not a folder")
    # a failure while writing (disk full, permissions) names the output, not the writer's temp file beside it
    import pytest_genai.atomic as atomic

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / ".r.md.abc123.tmp"))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", full)
    assert report_main([str(base), "-o", str(tmp_path / "r.md")]) == EXIT_BAD_INPUT
    line = one_line_error(capsys, f"cannot write {tmp_path / 'r.md'}: No space left on device")
    assert ".tmp" not in line


def test_outputs_keep_an_existing_mode_and_new_ones_follow_the_umask(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    kept.chmod(0o640)
    old_mask = os.umask(0o022)
    try:
        for main, argv in ((gate_main, [str(base), str(base)]), (compare_main, [str(base), str(base)]),
                           (report_main, [str(base)])):
            new = tmp_path / f"new-{main.__name__}.md"
            assert main([*argv, "-o", str(kept), "-o", str(new)]) == EXIT_OK
            assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() != "old"
            assert stat.S_IMODE(new.stat().st_mode) == 0o644
        os.umask(0o077)
        private = tmp_path / "private.md"
        assert gate_main([str(base), str(base), "-o", str(private)]) == EXIT_OK
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    finally:
        os.umask(old_mask)
    assert not list(tmp_path.glob(".*.tmp"))


def test_symlinked_output_is_written_through(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant()])
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert gate_main([str(base), str(base), "-o", str(link)]) == EXIT_OK
    assert link.is_symlink() and "**PASS**" in real.read_text()


# --- 6. hostile numbers and encodings ---------------------------------------------------------------------------

def _raw(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_integer_too_large_for_a_float_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    good = write_run(tmp_path / "good.json", [quant()])
    text = json.dumps(run_doc([quant()])).replace('"tokens_per_s": 1000.0', '"tokens_per_s": 1' + "0" * 400)
    huge = _raw(tmp_path, "huge.json", text)
    for main, argv in ((gate_main, [str(good), str(huge)]), (compare_main, [str(huge), str(good)])):
        assert main(argv) == EXIT_BAD_INPUT
        one_line_error(capsys, str(huge), "tokens_per_s is an integer", "too large for a float")
    # beyond Python's int-parsing digit limit the JSON reader itself refuses it
    longer = _raw(tmp_path, "longer.json", text.replace("1" + "0" * 400, "1" + "0" * 5000))
    assert gate_main([str(good), str(longer)]) == EXIT_BAD_INPUT
    one_line_error(capsys, str(longer), "invalid JSON")


def test_huge_integer_median_is_ignored_not_a_crash(tmp_path: Path, capsys) -> None:
    text = json.dumps(run_doc([quant(median=0.5)])).replace('"median": 0.5', '"median": 1' + "0" * 400)
    path = _raw(tmp_path, "m.json", text)
    assert "benchmark_median_s" not in load_run(path).records[0].metrics
    assert gate_main([str(path), str(path)]) == EXIT_OK


def test_utf8_bom_is_accepted(tmp_path: Path, capsys) -> None:
    good = write_run(tmp_path / "good.json", [quant()])
    bom = _raw(tmp_path, "bom.json", b"\xef\xbb\xbf" + good.read_bytes())
    assert load_run(bom).records[0].name == "test_q[cpu-real]"
    assert gate_main([str(bom), str(good)]) == EXIT_OK
    assert compare_main([str(good), str(bom)]) == EXIT_OK
    assert report_main([str(bom)]) == EXIT_OK


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_json_is_one_line_exit_2(tmp_path: Path, capsys, depth: int) -> None:
    good = write_run(tmp_path / "good.json", [quant()])
    doc = json.dumps(run_doc([quant(config={"mode": "real", "deep": "@"})]))
    deep = _raw(tmp_path, "deep.json", doc.replace('"@"', "[" * depth + "]" * depth))
    for main, argv in ((gate_main, [str(good), str(deep)]), (compare_main, [str(deep), str(good)]),
                       (report_main, [str(deep)])):
        assert main(argv) == EXIT_BAD_INPUT
        one_line_error(capsys, str(deep), "nested")


# --- 7. the two-run output is a summary -------------------------------------------------------------------------

def test_gate_of_a_run_against_itself_is_a_few_lines_and_all_prints_every_row(tmp_path: Path, capsys) -> None:
    many = [quant(f"test_q[{i}]", config={"mode": "real", "bits": i}) for i in range(20)]
    path = write_run(tmp_path / "run.json", many)
    assert gate_main([str(path), str(path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 15, out
    assert "**PASS**: 20 benchmark(s) compared, 0 unmatched; 40 gated metric value(s): 0 regressed" in out
    assert compare_main([str(path), str(path)]) == EXIT_OK
    assert len(capsys.readouterr().out.splitlines()) < 15
    for main in (gate_main, compare_main):
        assert main([str(path), str(path), "--all"]) == EXIT_OK
        rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| test_q[")]
        assert len(rows) == 40


def test_summary_lists_regressions_and_improvements_past_the_threshold(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [quant("a", config={"m": "a"}), quant("b", config={"m": "b"}),
                                              quant("c", config={"m": "c"})])
    cur = write_run(tmp_path / "cur.json", [quant("a", config={"m": "a"}, tps=400.0),
                                            quant("b", config={"m": "b"}, tps=1300.0),
                                            quant("c", config={"m": "c"}, tps=1010.0)])
    assert compare_main([str(base), str(cur)]) == EXIT_OK
    out = capsys.readouterr().out
    regressed, improved = out.split("Regressed beyond")[1].split("Improved past")
    assert "| a " in regressed and "| b " not in regressed
    assert "| b " in improved and "| a " not in improved and "| c " not in improved  # +1 % is within 5 %
    assert "3 benchmark(s) compared, 0 unmatched; 6 gated metric value(s): 1 regressed, 1 improved" in out
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    out = capsys.readouterr().out
    assert "Improved past the threshold" in out and "| b " in out.split("Improved past")[1]
