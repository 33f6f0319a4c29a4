"""The gate on intervals: a metric whose rounds both runs kept reads regressed / improved / unchanged / inconclusive
from its ratio's bootstrap interval; CPU pressure can only make a row inconclusive; deterministic metrics keep their
exact comparison, and measured ones without rounds are labelled point comparisons; units before values."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_genai.claims import load_metrics
from pytest_genai.cli.report import compare_main, gate_main
from pytest_genai.report.compare import (
    EXACT, IMPROVED, INCONCLUSIVE, INTERVAL, POINT, REGRESSED, UNCHANGED, UNITS_DIFFER, compare_runs,
)
from pytest_genai.results.errors import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
from pytest_genai.report.gate import gate_runs
from pytest_genai.plugin.baseline import BaselinePlugin
from pytest_genai.results.registry import metric_info_from
from pytest_genai.results.runs import run_from_json
from pytest_genai.report.thresholds import parse_thresholds

from .runfiles import bench, run_doc, write_run

INFO = metric_info_from(load_metrics())


def timed(name: str, tps: float, spread: float = 0.02, n: int = 8, *, seed: int = 0, stall: float | None = None,
          metric: str = "tokens_per_s", unit: str | None = None, **extra) -> dict:
    """A benchmark whose ``metric`` has ``n`` rounds spread +-``spread`` around ``tps`` (seeded)."""
    rng = random.Random(seed)
    entry = bench(name, config={"id": name}, metrics={metric: tps, **extra}, units={metric: unit} if unit else None)
    genai = entry["extra_info"]["genai"]
    if n:
        genai["metric_rounds"] = {metric: [tps * (1 + rng.uniform(-spread, spread)) for _ in range(n)]}
    if stall is not None:
        genai["attachments"]["cpu_contention"] = {"stall_share_measured": stall, "window_s": 3.0, "method": "PSI"}
    return entry


def run(*entries, name="x.json"):
    return run_from_json(run_doc(list(entries)), name)


def row(base_entry, cur_entry, metric="tokens_per_s", spec=None):
    comparison = compare_runs(run(base_entry), run(cur_entry), INFO, parse_thresholds(spec))
    (mc,) = [m for m in comparison.pairs[0].metrics if m.metric == metric]
    return mc


def test_a_30_percent_slowdown_is_regressed_on_its_interval_and_same_code_is_unchanged() -> None:
    slow = row(timed("a", 1000.0, seed=1), timed("a", 700.0, seed=2))
    assert (slow.status, slow.basis, slow.verdict) == (REGRESSED, INTERVAL, "regressed")
    assert slow.interval["hi"] < 0.95 and slow.interval["n"] == 8
    same = row(timed("a", 1000.0, seed=1), timed("a", 1000.0, seed=2))
    assert (same.status, same.basis) == (UNCHANGED, INTERVAL)
    faster = row(timed("a", 1000.0, seed=1), timed("a", 1300.0, seed=2))
    assert faster.status == IMPROVED and faster.improved_past_limit


def test_noise_wider_than_the_threshold_is_inconclusive_where_the_point_comparison_failed() -> None:
    """Rounds spread +-30 %, the current median 8 % lower: two values alone fail a 5 % gate; the interval says noise
    could put the change on either side."""
    mc = row(timed("a", 1000.0, 0.3, seed=1), timed("a", 920.0, 0.3, seed=2))
    assert mc.status == INCONCLUSIVE and mc.undecided and "past the 5% threshold but not significant" in mc.note
    point = row(timed("a", 1000.0, 0.3, n=0), timed("a", 920.0, 0.3, n=0))
    assert (point.status, point.basis) == (INCONCLUSIVE, POINT) and point.undecided
    assert "no rounds recorded in either run" in point.note


def test_few_rounds_decide_a_large_change_and_more_rounds_never_weaken_a_verdict() -> None:
    """Two to four rounds a side read a 10x slowdown as regressed (the old rule held back every interval under 90%:
    a 10x slower run with 2-4 rounds a side passed); with 5 rounds a 40% drop is decided too."""
    for n in (2, 3, 4):
        tenfold = row(timed("a", 1000.0, n=n, seed=1), timed("a", 100.0, n=n, seed=2))
        assert tenfold.status == REGRESSED, (n, tenfold.note)
    assert row(timed("a", 1000.0, n=5, seed=1), timed("a", 600.0, n=5, seed=2)).status == REGRESSED


def test_rounds_on_one_side_only_is_a_labelled_point_comparison() -> None:
    mc = row(timed("a", 1000.0, seed=1), timed("a", 400.0, n=0))
    assert (mc.status, mc.basis) == (REGRESSED, POINT) and "no rounds recorded in the current run" in mc.note
    mc = row(timed("a", 1000.0, seed=1), timed("a", 600.0, n=0))
    assert (mc.status, mc.basis) == (INCONCLUSIVE, POINT) and mc.undecided and "only past 2x" in mc.note
    mc = row(timed("a", 1000.0, n=0), timed("a", 600.0, seed=1))
    assert "no rounds recorded in the baseline" in mc.note


def test_cpu_pressure_makes_a_row_inconclusive_but_never_decides_it() -> None:
    # a contended current run: its slowdown may be the load's, so no regression is decided ...
    loaded = row(timed("a", 1000.0, seed=1), timed("a", 600.0, seed=2, stall=0.6))
    assert loaded.status == INCONCLUSIVE and loaded.undecided and "undecided under contention" in loaded.note
    # ... but a contended current run that is still as fast stays unchanged
    assert row(timed("a", 1000.0, seed=1), timed("a", 1000.0, seed=2, stall=0.6)).status == UNCHANGED
    # a contended baseline was slow itself: a current run 20 % slower than it is not cleared
    slow_base = row(timed("a", 800.0, seed=1, stall=0.7), timed("a", 810.0, seed=2))
    assert slow_base.status == INCONCLUSIVE and slow_base.undecided
    assert "a contended baseline cannot clear" in slow_base.note
    # pressure under the claims' contention share (30 %) changes nothing
    assert row(timed("a", 1000.0, seed=1), timed("a", 600.0, seed=2, stall=0.2)).status == REGRESSED



def test_cpu_pressure_holds_for_point_rows_too() -> None:
    """Two values without rounds say even less about noise than rounds do: a contended current run is not called
    regressed on them either, and a contended baseline does not clear a current run."""
    loaded = row(timed("a", 1000.0, n=0), timed("a", 400.0, n=0, stall=0.6))
    assert (loaded.status, loaded.basis) == (INCONCLUSIVE, POINT)
    assert "undecided under contention" in loaded.note
    cleared = row(timed("a", 800.0, n=0, stall=0.7), timed("a", 810.0, n=0))
    assert cleared.status == INCONCLUSIVE and "a contended baseline cannot clear" in cleared.note
    # quiet runs: the labelled point comparison decides as before
    assert row(timed("a", 1000.0, n=0, stall=0.1), timed("a", 400.0, n=0, stall=0.2)).status == REGRESSED

def test_a_point_row_with_overlapping_own_intervals_is_no_regression() -> None:
    """A load imbalance over per-layer medians records its own interval, not rounds: a drop past the threshold that
    both runs' intervals could hold reads inconclusive; disjoint intervals still decide."""
    def li(value, lo, hi):
        entry = timed("a", value, n=0, metric="load_imbalance")
        entry["extra_info"]["genai"]["metric_intervals"] = {"load_imbalance": {
            "lo": lo, "hi": hi, "level": 0.95, "n": 9, "method": "LI of subtask medians, percentile bootstrap"}}
        return entry

    mc = row(li(0.99, 0.95, 1.0), li(0.90, 0.82, 0.97), metric="load_imbalance")
    assert (mc.status, mc.basis) == (INCONCLUSIVE, POINT) and "intervals of the value overlap" in mc.note
    apart = row(li(0.99, 0.95, 1.0), li(0.80, 0.75, 0.86), metric="load_imbalance")
    assert (apart.status, apart.basis) == (REGRESSED, POINT)
    # an interval on one side only: the point rule (past 2x decides, inside it undecided)
    one_side = row(li(0.99, 0.95, 1.0), timed("a", 0.90, n=0, metric="load_imbalance"), metric="load_imbalance")
    assert one_side.status == INCONCLUSIVE and one_side.undecided and "only past 2x" in one_side.note
    odd = li(0.90, 0.82, 0.97)
    odd["extra_info"]["genai"]["metric_intervals"]["load_imbalance"] = {"lo": "low", "hi": 0.97}
    assert row(li(0.99, 0.95, 1.0), odd, metric="load_imbalance").undecided  # ignored, never an error


def test_deterministic_metrics_keep_the_exact_comparison() -> None:
    base = bench("q", metrics={"perplexity": 12.0, "flops_modeled": 1e9}, sources={"perplexity": "measured",
                                                                                  "flops_modeled": "modeled"})
    cur = bench("q", metrics={"perplexity": 12.1, "flops_modeled": 1e9}, sources={"perplexity": "measured",
                                                                                 "flops_modeled": "modeled"})
    comparison = compare_runs(run(base), run(cur), INFO, parse_thresholds(None))
    got = {m.metric: (m.status, m.basis) for m in comparison.pairs[0].metrics}
    assert got["perplexity"] == (REGRESSED, EXACT) and got["flops_modeled"][1] == EXACT



def test_a_modeled_number_from_measured_times_is_compared_as_a_measurement_not_exactly() -> None:
    """achieved_gbs_modeled is modeled bytes over a measured time: a slower machine moves it, so it is no exact row
    (which noise could never make inconclusive); peak_bytes_modeled is the memory model's alone and stays exact."""
    def side(gbs: float, peak: float, seed: int) -> dict:
        entry = timed("d", gbs, seed=seed, metric="achieved_gbs_modeled", peak_bytes_modeled=peak)
        entry["extra_info"]["genai"]["metric_sources"] = {"achieved_gbs_modeled": "modeled",
                                                          "peak_bytes_modeled": "modeled"}
        return entry

    comparison = compare_runs(run(side(4.0, 1e6, 1)), run(side(3.0, 1.2e6, 2)), INFO, parse_thresholds(None))
    got = {m.metric: m for m in comparison.pairs[0].metrics}
    rate = got["achieved_gbs_modeled"]
    assert (rate.status, rate.basis) == (REGRESSED, INTERVAL) and "compared as a measurement" in rate.note
    assert (got["peak_bytes_modeled"].status, got["peak_bytes_modeled"].basis) == (REGRESSED, EXACT)
    # as Level 1 records it, without rounds on either side: a labelled point comparison, not an exact one
    bare = [side(4.0, 1e6, 1), side(3.0, 1e6, 2)]
    for entry in bare:
        del entry["extra_info"]["genai"]["metric_rounds"]
    point = compare_runs(run(bare[0]), run(bare[1]), INFO, parse_thresholds(None))
    (row,) = [m for m in point.pairs[0].metrics if m.metric == "achieved_gbs_modeled"]
    assert (row.status, row.basis) == (INCONCLUSIVE, POINT) and "no rounds recorded in either run" in row.note

def test_quality_ratios_take_their_quality_threshold_from_the_registry() -> None:
    """A 4 % worse perplexity ratio passed the 5 % default; ppl_ratio, word_ppl_ratio, rolling_token_perplexity and
    lmeval_word_perplexity now carry perplexity's 0.5 %."""
    names = ("ppl_ratio", "word_ppl_ratio", "rolling_token_perplexity", "lmeval_word_perplexity")
    base = run(bench("q", metrics={n: 1.00 for n in names}))
    cur = run(bench("q", metrics={n: 1.04 for n in names}))
    result = gate_runs(base, cur, INFO, parse_thresholds(None))
    assert sorted(f.metric for f in result.failures) == sorted(names)
    assert all("limit 0.5%" in f.reason for f in result.failures)


def test_units_are_converted_where_the_registry_knows_both() -> None:
    """step_time_s in ms in the baseline, in s now: 120 ms -> 0.18 s is a 50 % slowdown, not an improvement."""
    base = timed("a", 120.0, metric="step_time_s", unit="ms", seed=1)
    cur = timed("a", 0.18, metric="step_time_s", unit="s", seed=2)
    mc = row(base, cur, "step_time_s")
    assert mc.status == REGRESSED and mc.baseline == pytest.approx(0.12) and mc.unit == "s"
    assert "the baseline's ms converted to s" in mc.note
    same = row(timed("a", 180.0, metric="step_time_s", unit="ms", seed=1),
               timed("a", 0.18, metric="step_time_s", unit="s", seed=2), "step_time_s")
    assert same.status == UNCHANGED


def test_units_without_a_conversion_are_refused_and_fail_the_gate(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "b.json", [timed("a", 120.0, metric="step_time_s", unit="ticks", n=0)])
    cur = write_run(tmp_path / "c.json", [timed("a", 0.18, metric="step_time_s", unit="s", n=0)])
    comparison = compare_runs(run_from_json(json.loads(base.read_text()), "b"),
                              run_from_json(json.loads(cur.read_text()), "c"), INFO, parse_thresholds(None))
    (mc,) = comparison.pairs[0].metrics
    assert mc.status == UNITS_DIFFER and mc.change is None and "'ticks'" in mc.note
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| a | cpu | step_time_s | the baseline records it in 'ticks', the current run in 's'" in out
    assert "1 refused (units differ)" in out


@pytest.fixture
def noisy_pair(tmp_path: Path) -> tuple[Path, Path]:
    base = write_run(tmp_path / "b.json", [timed("steady", 1000.0, seed=1), timed("noisy", 1000.0, 0.3, seed=3)])
    cur = write_run(tmp_path / "c.json", [timed("steady", 1000.0, seed=2), timed("noisy", 920.0, 0.3, seed=4)])
    return base, cur


def test_the_gate_exits_0_listing_inconclusive_rows_and_strict_makes_them_fail(noisy_pair, capsys) -> None:
    base, cur = noisy_pair
    base, cur = str(base), f"{cur} --run-noise 0".split()  # the rounds' own rule; run noise: test_same_code_pair.py
    cur, rounds_only = cur[0], cur[1:]
    assert gate_main([base, cur, *rounds_only]) == EXIT_UNDECIDED  # the noisy row's 8% drop is past 5%, undecided
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert out.startswith("**UNDECIDED** (exit 3): nothing regressed, but 1 row(s) past the threshold could not be "
                          "decided (1 by noise for the rounds recorded); record more rounds")
    assert "PASS" not in out
    assert "Inconclusive (the rounds' interval cannot decide" in out
    assert "| noisy | cpu | tokens_per_s [tokens/s] | 1000 | 920 | 0.92x | [" in out
    assert ("2 gated metric value(s): 0 regressed, 0 improved past the threshold, 1 unchanged (1 on intervals), "
            "1 inconclusive (1 on intervals)") in out
    assert "1 row(s) past the threshold undecided, listed above" in out
    assert gate_main([base, cur, *rounds_only, "--allow-undecided"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("**UNDECIDED, allowed** (exit 0, --allow-undecided)")
    assert gate_main([base, cur, *rounds_only, "--strict-inconclusive"]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| noisy | cpu | tokens_per_s | inconclusive (--strict-inconclusive): ratio interval [" in out


def test_the_json_output_carries_verdicts_intervals_and_the_inconclusive_list(noisy_pair, capsys) -> None:
    base, cur = noisy_pair
    assert gate_main([str(base), str(cur), "--format", "json", "--all", "--run-noise", "0"]) == EXIT_UNDECIDED
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdicts"]["inconclusive"] == {"interval": 1, "exact": 0, "point": 0}
    assert doc["verdicts"]["unchanged"]["interval"] == 1 and doc["exit_code"] == EXIT_UNDECIDED
    assert doc["verdict"] == "undecided" and [u["metric"] for u in doc["undecided"]] == ["tokens_per_s"]
    assert [(i["benchmark"], i["metric"]) for i in doc["inconclusive"]] == [("noisy", "tokens_per_s")]
    noisy = next(r for r in doc["rows"] if r["benchmark"] == "noisy")
    assert noisy["basis"] == "interval" and noisy["verdict"] == "inconclusive" and noisy["rounds"] == 8
    assert noisy["interval_lo"] < 0.95 < 1.0 < noisy["interval_hi"] and noisy["interval_level"] == 0.98
    assert compare_main([str(base), str(cur), "--format", "csv"]) == EXIT_OK
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("status,verdict,basis,interval_lo,interval_hi,interval_level,rounds,note")


def _fake_bench(tps_rounds, median_rounds):
    stats = SimpleNamespace(min=min(median_rounds), max=max(median_rounds), mean=sum(median_rounds) / len(median_rounds),
                            median=sorted(median_rounds)[len(median_rounds) // 2], stddev=0.0, iqr=0.0,
                            data=list(median_rounds))
    genai = bench("a", config={"id": "a"}, metrics={"tokens_per_s": sorted(tps_rounds)[len(tps_rounds) // 2]})
    genai = genai["extra_info"]["genai"]
    genai["metric_rounds"] = {"tokens_per_s": list(tps_rounds)}
    return SimpleNamespace(extra_info={"genai": genai}, stats=SimpleNamespace(stats=stats))


def test_the_inline_baseline_judges_on_rounds_too(tmp_path: Path) -> None:
    """--genai-baseline: pytest-benchmark's own rounds (stats.data) and metric_rounds reach the interval verdict
    (with the measured run noise between the baseline's launch and this one: a step 2x slower is decided)."""
    rng = random.Random(5)
    base_entry = timed("a", 1000.0, 0.3, seed=1)
    base_entry["stats"] = {"median": 0.010, "mean": 0.010, "rounds": 8,
                           "data": [0.010 * (1 + rng.uniform(-0.02, 0.02)) for _ in range(8)]}
    baseline = write_run(tmp_path / "base.json", [base_entry])
    plugin = BaselinePlugin(None, str(baseline), None)  # type: ignore[arg-type]
    noisy = [920.0 * (1 + rng.uniform(-0.3, 0.3)) for _ in range(8)]
    slower = [0.020 * (1 + rng.uniform(-0.02, 0.02)) for _ in range(8)]
    result = plugin.compare_item("benchmarks/test_x.py::a", "a", _fake_bench(noisy, slower))
    got = {m.metric: (m.status, m.basis) for m in result.metrics}
    assert got == {"tokens_per_s": (INCONCLUSIVE, INTERVAL), "benchmark_median_s": (REGRESSED, INTERVAL)}
    assert [m.metric for m in result.regressions] == ["benchmark_median_s"]
    assert [m.metric for m in result.inconclusive] == ["tokens_per_s"]
    assert "inconclusive: tokens_per_s" in plugin.summary_table()


def test_published_quality_numbers_are_measurements_not_exact_values() -> None:
    """A vendor's perplexity on two generations comes from settings the rows may not share: +4% is not an exact
    regression (a recorded perplexity of the suite's own is)."""
    def ppl(value: float, source: str) -> dict:
        entry = bench("p", config={"id": "p"}, metrics={"perplexity": value})
        entry["extra_info"]["genai"]["metric_sources"] = {"perplexity": source}
        return entry

    own = row(ppl(10.0, "measured"), ppl(10.4, "measured"), metric="perplexity")
    assert (own.status, own.basis) == (REGRESSED, EXACT)
    published = row(ppl(10.0, "reference"), ppl(10.4, "reference"), metric="perplexity")
    assert published.basis == POINT and published.status == INCONCLUSIVE and published.undecided
