"""pytest-benchmark's conventions: ``field:N%`` thresholds and storage ids (``0003``, ``latest``) as baselines."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_genai.report.cli import compare_main, gate_main
from pytest_genai.report.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION
from pytest_genai.report.thresholds import ThresholdError, parse_thresholds

from .runfiles import bench, write_run


def timed(median: float, mean: float) -> dict:
    entry = bench("test_q[cpu]", "quant", {"bits": 8}, {"tokens_per_s": 1000.0})
    entry["stats"] = {"min": median * 0.9, "max": mean * 2, "mean": mean, "median": median, "stddev": 0.01,
                      "iqr": 0.01, "rounds": 5}
    return entry


def test_field_percent_names_pytest_benchmark_statistics() -> None:
    t = parse_thresholds("median:10%,mean:5%,tokens_per_s:3%")
    assert t.for_metric("benchmark_median_s") == pytest.approx(0.10)
    assert t.for_metric("benchmark_mean_s") == pytest.approx(0.05)
    assert t.for_metric("tokens_per_s") == pytest.approx(0.03)
    assert t.timing_fields() == {"benchmark_mean_s": "mean", "benchmark_median_s": "median"}
    with pytest.raises(ThresholdError, match="median:10%"):
        parse_thresholds("median:0.001")  # pytest-benchmark's absolute difference: thresholds here are relative


@pytest.mark.parametrize(("spec", "code"), [
    ("median:10%", EXIT_REGRESSION),  # median 1.0 -> 1.2 s: +20%
    ("median:25%", EXIT_OK),
    ("median:25%,mean:5%", EXIT_REGRESSION),  # mean 1.0 -> 1.5 s: compared only because a threshold names it
    ("median:25%,mean:60%", EXIT_OK),
])
def test_gate_applies_field_thresholds_to_round_times(tmp_path: Path, capsys, spec: str, code: int) -> None:
    base = write_run(tmp_path / "base.json", [timed(1.0, 1.0)])
    cur = write_run(tmp_path / "cur.json", [timed(1.2, 1.5)])
    assert gate_main([str(base), str(cur), "--max-regression", spec, "--no-claims"]) == code
    out = capsys.readouterr().out
    if code == EXIT_REGRESSION:
        assert ("benchmark_mean_s" in out) == ("mean:5%" in spec)


def test_unknown_field_stays_an_error(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [timed(1.0, 1.0)])
    for main in (gate_main, compare_main):
        assert main([str(base), str(base), "--max-regression", "medain:10%"]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "unknown metric 'medain'" in err and "benchmark_mean_s" in err
