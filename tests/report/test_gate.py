"""compare and gate logic on hand-written runs, and the hardware-upgrade mode against the real claims data."""
import math

import pytest

from pytest_genai.claims import load_claims, load_metrics
from pytest_genai.report.compare import (
    BETTER, MISSING_BASELINE, MISSING_CURRENT, NO_DIRECTION, NOT_FINITE, REGRESSED, SAME, UNREGISTERED, WORSE,
    compare_runs,
)
from pytest_genai.report.gate import CLAIM_CHECKED, gate_runs
from pytest_genai.results.registry import MetricInfo, metric_info_from
from pytest_genai.results.runs import run_from_json
from pytest_genai.report.thresholds import parse_thresholds

from .runfiles import bench, run_doc

INFO = metric_info_from({
    "tokens_per_s": MetricInfo("tokens_per_s", "tokens/s", "higher"),
    "perplexity": MetricInfo("perplexity", "1", "lower"),
    "compute_bound_modeled": {"unit": "1", "direction": "none"},
})


def run(*entries, name="x.json"):
    return run_from_json(run_doc(list(entries)), name)


def statuses(comparison):
    return {(pc.pair.current.name, m.metric): m.status for pc in comparison.pairs for m in pc.metrics}


def test_compare_classifies_each_metric() -> None:
    base = run(bench("a", metrics={"tokens_per_s": 100.0, "perplexity": 12.0, "compute_bound_modeled": 1.0, "odd": 1.0,
                                   "gone": 1.0}))
    cur = run(bench("a", metrics={"tokens_per_s": 97.0, "perplexity": 11.0, "compute_bound_modeled": 0.0, "odd": 2.0,
                                  "new": 3.0}))
    comparison = compare_runs(base, cur, INFO, parse_thresholds(None))
    assert statuses(comparison) == {
        ("a", "tokens_per_s"): WORSE, ("a", "perplexity"): BETTER, ("a", "compute_bound_modeled"): NO_DIRECTION,
        ("a", "odd"): UNREGISTERED, ("a", "gone"): MISSING_CURRENT, ("a", "new"): MISSING_BASELINE,
    }
    tps = comparison.pairs[0].metrics[0]
    assert tps.ratio == pytest.approx(0.97) and tps.change == pytest.approx(-0.03) and tps.unit == "tokens/s"


def test_gate_fails_on_regression_beyond_the_metric_threshold() -> None:
    base = run(bench("a", metrics={"tokens_per_s": 100.0, "perplexity": 12.00}))
    cur = run(bench("a", metrics={"tokens_per_s": 96.0, "perplexity": 12.10}))
    loose = gate_runs(base, cur, INFO, parse_thresholds("tokens_per_s=5%,perplexity=1%"))
    assert loose.passed
    strict = gate_runs(base, cur, INFO, parse_thresholds("tokens_per_s=3%,perplexity=0.5%"))
    # measured values without rounds, past the threshold but within 2x: undecided (exit 3), never passed
    assert not strict.failures and strict.exit_code == 3
    assert [m.metric for _, m in strict.undecided] == ["tokens_per_s", "perplexity"]
    halved = gate_runs(base, run(bench("a", metrics={"tokens_per_s": 40.0, "perplexity": 12.0})), INFO,
                       parse_thresholds("tokens_per_s=3%"))
    assert [(f.metric, f.reason.split(" (")[0]) for f in halved.failures] == [("tokens_per_s", "dropped 60.00%")]
    assert "limit 3%" in halved.failures[0].reason


def test_gate_nonfinite_current_fails_and_nonfinite_baseline_does_not() -> None:
    base = run(bench("a", metrics={"tokens_per_s": 100.0, "perplexity": math.nan}))
    cur = run(bench("a", metrics={"tokens_per_s": math.nan, "perplexity": 12.0}))
    result = gate_runs(base, cur, INFO, parse_thresholds(None))
    assert statuses(result.comparison)[("a", "tokens_per_s")] == NOT_FINITE
    assert [f.metric for f in result.failures] == ["tokens_per_s"] and "current value is nan" in result.failures[0].reason


def test_gate_fails_on_missing_benchmarks_and_directed_metrics_unless_allowed_and_strict_on_any_metric() -> None:
    """A metric with a direction (perplexity) that the current run no longer records failed nothing unless
    --strict: a change that broke the perplexity's recording passed the gate as "no regression"."""
    base = run(bench("a", metrics={"tokens_per_s": 1.0, "perplexity": 2.0, "compute_bound_modeled": 1.0}),
               bench("b", config={"k": 1}))
    cur = run(bench("a", metrics={"tokens_per_s": 1.0}))
    failures = gate_runs(base, cur, INFO, parse_thresholds(None)).failures
    assert [(f.benchmark, f.metric) for f in failures] == [("a", "perplexity"), ("b", "*")]
    assert all("--allow-missing" in f.reason for f in failures)
    assert gate_runs(base, cur, INFO, parse_thresholds(None), allow_missing=True).passed
    failures = gate_runs(base, cur, INFO, parse_thresholds(None), strict=True).failures
    assert {(f.benchmark, f.metric) for f in failures} == {("a", "perplexity"), ("a", "compute_bound_modeled"),
                                                            ("b", "*")}
    failures = gate_runs(base, cur, INFO, parse_thresholds(None), strict=True, allow_missing=True).failures
    assert {(f.benchmark, f.metric) for f in failures} == {("a", "perplexity"), ("a", "compute_bound_modeled")}


def test_a_directed_metric_recorded_as_null_fails_the_gate(tmp_path, capsys) -> None:
    """``"tokens_per_s": null`` in the current run was dropped with a warning on stderr and the gate passed."""
    import json

    from pytest_genai.cli.report import gate_main

    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    base.write_text(json.dumps(run_doc([bench("a", metrics={"tokens_per_s": 100.0})])))
    cur.write_text(json.dumps(run_doc([bench("a", metrics={"tokens_per_s": None})])))
    assert gate_main([str(base), str(cur)]) == 1
    out = capsys.readouterr().out
    assert "**FAIL**" in out and "tokens_per_s" in out and "missing from the current run" in out
    assert gate_main([str(base), str(cur), "--allow-missing"]) == 0


def test_identical_runs_pass_with_zero_threshold() -> None:
    r = run(bench("a", metrics={"tokens_per_s": 100.0, "perplexity": 12.0}))
    result = gate_runs(r, r, INFO, parse_thresholds("*=0%"))
    assert result.passed and set(statuses(result.comparison).values()) == {SAME}


# --- hardware-upgrade mode, on the claims data as shipped --------------------------------------------------------

CLAIMS = [c for c in load_claims() if c.kind == "generation"]
REAL_INFO = metric_info_from(load_metrics())


#: Five rounds within 0.5% of the value: enough for a generation claim's interval to decide (fewer read inconclusive).
TIGHT = (0.995, 0.998, 1.0, 1.002, 1.005)


def finetune(gen: str, tps: float, strategy: str = "ddp", rounds: bool = True):
    """A fine-tuning row; ``rounds``: every timed step's tokens/s recorded, as the suite's rows record them."""
    entry = bench(f"test_ft[hpu-{strategy}]", "finetune", {"strategy": strategy, "model": "llama-3.1-8b"},
                  {"tokens_per_s": tps}, device=("hpu", gen), model="llama-3.1-8b")
    if rounds:
        entry["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": [tps * f for f in TIGHT]}
    return entry


def test_gaudi_to_gaudi2_speedup_in_band_passes_and_replaces_the_threshold() -> None:
    result = gate_runs(run(finetune("gaudi", 1000.0)), run(finetune("gaudi2", 2750.0)), REAL_INFO,
                       parse_thresholds(None), CLAIMS)
    (check,) = result.generation_checks
    assert check.claim_id == "A2.gen.gaudi_gaudi2" and check.speedup == pytest.approx(2.75)
    assert check.metric == "tokens_per_s" and check.verdict == "pass" and result.passed
    assert statuses(result.comparison)[("test_ft[hpu-ddp]", "tokens_per_s")] == CLAIM_CHECKED


@pytest.mark.parametrize(("new", "bound"), [(2000.0, "< min 2.5"), (3500.0, "> max 3")])
def test_gaudi_to_gaudi2_speedup_out_of_band_fails(new: float, bound: str) -> None:
    result = gate_runs(run(finetune("gaudi", 1000.0)), run(finetune("gaudi2", new)), REAL_INFO,
                       parse_thresholds(None), CLAIMS)
    assert not result.passed
    (failure,) = result.failures
    assert "A2.gen.gaudi_gaudi2" in failure.reason and bound in failure.reason and "gaudi→gaudi2" in failure.reason


def test_generation_variants_match_and_experiment_scopes_claims() -> None:
    diffusion = lambda gen, v: bench("test_sr", "diffusion", {"res": 64}, {"images_per_s": v},  # noqa: E731
                                     device=("cuda", gen), model=None)
    base, cur = run(diffusion("a100-sxm4-80gb", 10.0)), run(diffusion("h100-sxm", 21.0))
    info = dict(REAL_INFO, images_per_s=MetricInfo("images_per_s", "images/s", "higher"))
    result = gate_runs(base, cur, info, parse_thresholds(None), CLAIMS)
    assert [c.claim_id for c in result.generation_checks] == ["A3.gen.a100_h100"] and result.passed


def test_different_generations_without_a_claim_are_gated_as_software_change() -> None:
    base, cur = run(finetune("cpu", 100.0)), run(finetune("gaudi3", 50.0))
    result = gate_runs(base, cur, REAL_INFO, parse_thresholds(None), CLAIMS)
    assert result.generation_checks == () and not result.passed
    assert any("no generation claim for cpu→gaudi3" in n for n in result.notes)


def test_claim_without_usable_metric_is_noted() -> None:
    base = run(bench("t", "finetune", {}, {"loss": 1.0}, device=("hpu", "gaudi2")))
    cur = run(bench("t", "finetune", {}, {"loss": 1.0}, device=("hpu", "gaudi3")))
    result = gate_runs(base, cur, REAL_INFO, parse_thresholds(None), CLAIMS)
    assert result.generation_checks == () and "share no metric" in result.notes[0]


def test_a_claim_without_a_floor_keeps_the_regression_threshold() -> None:
    """A3.gen.gaudi2_gaudi3 says only "at most 3.4x": a Gaudi3 run 10x slower passes the claim, and the gate must
    still fail it as a regression."""
    def diffusion(gen, v):
        entry = bench("test_sr", "diffusion", {"res": 64}, {"images_per_s": v}, device=("hpu", gen), model=None)
        entry["extra_info"]["genai"]["metric_rounds"] = {"images_per_s": [v * f for f in TIGHT]}
        return entry

    info = dict(REAL_INFO, images_per_s=MetricInfo("images_per_s", "images/s", "higher"))
    slower = gate_runs(run(diffusion("gaudi2", 100.0)), run(diffusion("gaudi3", 10.0)), info, parse_thresholds(None),
                       CLAIMS)
    (check,) = slower.generation_checks
    assert check.claim_id == "A3.gen.gaudi2_gaudi3" and check.verdict == "pass" and not slower.passed
    assert statuses(slower.comparison)[("test_sr", "images_per_s")] != CLAIM_CHECKED
    faster = gate_runs(run(diffusion("gaudi2", 100.0)), run(diffusion("gaudi3", 150.0)), info,
                       parse_thresholds(None), CLAIMS)
    assert faster.passed and faster.generation_checks[0].verdict == "pass"


def test_an_inconclusive_generation_claim_keeps_the_regression_threshold() -> None:
    """A100 -> H100 10x slower with no rounds recorded: A3.gen.a100_h100 reads inconclusive (one ratio), and had
    switched the metric's regression threshold off, so the gate passed a 10x slowdown."""
    diffusion = lambda gen, v: bench("test_sr", "diffusion", {"res": 64}, {"images_per_s": v},  # noqa: E731
                                     device=("cuda", gen), model=None)
    info = dict(REAL_INFO, images_per_s=MetricInfo("images_per_s", "images/s", "higher"))
    slower = gate_runs(run(diffusion("a100-sxm4-80gb", 100.0)), run(diffusion("h100-sxm", 10.0)), info,
                       parse_thresholds(None), CLAIMS)
    (check,) = slower.generation_checks
    assert check.claim_id == "A3.gen.a100_h100" and check.verdict == "inconclusive"
    assert not slower.passed and [f.metric for f in slower.failures] == ["images_per_s"]
    assert statuses(slower.comparison)[("test_sr", "images_per_s")] == REGRESSED


def _with_rounds(entry, rounds):
    entry["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": list(rounds)}
    return entry


@pytest.mark.parametrize(("new_rounds", "verdict"), [
    ([2700.0, 2750.0, 2720.0, 2760.0, 2740.0], "pass"),  # clear of 2.5-3x
    ([2300.0, 2750.0, 2600.0, 2450.0, 2900.0], "inconclusive"),  # the interval straddles 2.5x
    ([2000.0, 2050.0, 2010.0, 2030.0, 2020.0], "fail"),
])
def test_a_generation_speedup_with_rounds_is_judged_on_its_interval(new_rounds, verdict) -> None:
    """Both runs recorded the throughput's rounds: the speedup's bootstrap interval, not one ratio, decides."""
    old = _with_rounds(finetune("gaudi", 1000.0), [990.0, 1000.0, 1010.0, 1005.0, 995.0])
    new = _with_rounds(finetune("gaudi2", sorted(new_rounds)[2]), new_rounds)
    result = gate_runs(run(old), run(new), REAL_INFO, parse_thresholds(None), CLAIMS)
    (check,) = result.generation_checks
    assert check.verdict == verdict and check.interval is not None and check.interval["n"] == 5
    assert result.passed == (verdict != "fail")
    one_sided = gate_runs(run(finetune("gaudi", 1000.0, rounds=False)), run(new), REAL_INFO, parse_thresholds(None),
                          CLAIMS)
    (check,) = one_sided.generation_checks  # rounds on one side only: one ratio, which noise could flip
    assert check.interval is None and check.verdict == "inconclusive" and "several rounds" in check.message


@pytest.mark.parametrize("n", [1, 2, 4])
def test_a_generation_speedup_from_fewer_than_five_rounds_a_side_decides_nothing(n) -> None:
    """A speedup is a timing claim: one ratio, or the bootstrap of 2-4 rounds a side (whose interval covers ~66% at
    2 while it claimed 95%), reads inconclusive however far it is from the bound; five rounds decide."""
    def side(gen, tps):
        entry = finetune(gen, tps, rounds=False)
        if n > 1:
            entry["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": [tps * f for f in TIGHT[:n]]}
        return entry

    result = gate_runs(run(side("gaudi", 1000.0)), run(side("gaudi2", 1500.0)), REAL_INFO, parse_thresholds(None),
                       CLAIMS)
    (check,) = result.generation_checks
    assert check.speedup == pytest.approx(1.5) and check.verdict == "inconclusive"
    assert (check.interval is None) == (n == 1)
    decided = gate_runs(run(finetune("gaudi", 1000.0)), run(finetune("gaudi2", 1500.0)), REAL_INFO,
                        parse_thresholds(None), CLAIMS)
    assert decided.generation_checks[0].verdict == "fail" and not decided.passed
