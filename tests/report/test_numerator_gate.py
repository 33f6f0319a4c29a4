"""The gate on a ratio over a peak (MFU, registered with ``numerator = "achieved_tflops"``): a CPU's peak is measured
by each session, so the MFU of two runs of the same code moves with it; its regression counts only where the
achieved TFLOP/s (the run's speed) reads regressed too."""
from __future__ import annotations

import random

import pytest

from pytest_genai.claims import load_metrics
from pytest_genai.claims.model import ClaimsError, merge_metrics, parse_metrics
from pytest_genai.report.compare import INCONCLUSIVE, REGRESSED, UNCHANGED, compare_runs, fails
from pytest_genai.results.registry import metric_info_from
from pytest_genai.results.runs import run_from_json
from pytest_genai.report.thresholds import parse_thresholds

from .runfiles import bench, run_doc

INFO = metric_info_from(load_metrics())


def side(tflops: float, peak: float, *, seed: int) -> dict:
    """A fine-tune run: 12 steps' achieved TFLOP/s and their MFU over the session's peak."""
    rng = random.Random(seed)
    steps = [tflops * (1 + rng.uniform(-0.02, 0.02)) for _ in range(12)]
    entry = bench("ft", experiment="finetune", config={"id": "ft"}, metrics={"achieved_tflops": tflops,
                                                                          "mfu": tflops / peak},
                  units={"achieved_tflops": "TFLOP/s", "mfu": "1"},
                  sources={"achieved_tflops": "measured", "mfu": "measured"})
    entry["extra_info"]["genai"]["metric_rounds"] = {"achieved_tflops": steps, "mfu": [t / peak for t in steps]}
    return entry


def rows(base: dict, cur: dict) -> dict:
    comparison = compare_runs(run_from_json(run_doc([base]), "b.json"), run_from_json(run_doc([cur]), "c.json"),
                              INFO, parse_thresholds("*=5%"))
    return {m.metric: m for m in comparison.pairs[0].metrics}


def test_mfu_is_registered_over_achieved_tflops() -> None:
    assert INFO["mfu"].numerator == "achieved_tflops"


def test_an_mfu_drop_from_a_higher_measured_peak_alone_reads_inconclusive() -> None:
    # the same speed, the second session's peak measured 19% higher: MFU 0.84x, wholly past 5%
    got = rows(side(0.0086, 0.1, seed=1), side(0.0086, 0.119, seed=2))
    assert got["achieved_tflops"].status == UNCHANGED
    assert got["mfu"].status == INCONCLUSIVE and not any(fails(m) for m in got.values())
    assert "achieved_tflops" in got["mfu"].note and "reads unchanged" in got["mfu"].note


def test_an_mfu_drop_the_achieved_tflops_shows_too_stays_a_regression() -> None:
    got = rows(side(0.0086, 0.1, seed=1), side(0.0070, 0.1, seed=2))
    assert got["achieved_tflops"].status == REGRESSED and got["mfu"].status == REGRESSED
    assert {m.metric for m in got.values() if fails(m)} == {"achieved_tflops", "mfu"}


def test_a_numerator_that_is_not_registered_is_a_one_line_error() -> None:
    data = {"metric": [{"name": "mfu", "unit": "1", "direction": "higher", "numerator": "achieved_tflop"}]}
    with pytest.raises(ClaimsError, match="metrics_x.toml: metric 'mfu': numerator 'achieved_tflop' is not a regis"):
        merge_metrics([("metrics_x.toml", parse_metrics(data, "metrics_x.toml"))])
    with pytest.raises(ClaimsError, match="field 'numerator' must name another metric"):
        parse_metrics({"metric": [{**data["metric"][0], "numerator": "mfu"}]}, "metrics_x.toml")
