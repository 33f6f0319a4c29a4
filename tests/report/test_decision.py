"""The gate's decision rule (:mod:`pytest_genai.report.decision`): Welch's t on log rounds against the threshold,
cross-checked against scipy, and its error rates by simulation (``scripts/gate_simulation.py``)."""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pytest_genai.report.decision import ALPHA, IMPROVED, INCONCLUSIVE, REGRESSED, UNCHANGED, decide, t_ppf, t_sf

ROOT = Path(__file__).resolve().parents[2]


def _simulation():
    spec = importlib.util.spec_from_file_location("gate_simulation", ROOT / "scripts" / "gate_simulation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gate_simulation", module)  # its dataclass looks its module up by name
    spec.loader.exec_module(sys.modules["gate_simulation"])
    return sys.modules["gate_simulation"]


@pytest.mark.parametrize("df", [1, 1.7, 2, 4.5, 12, 80])
def test_student_t_matches_scipy(df) -> None:
    stats = pytest.importorskip("scipy.stats")
    for t in (-4.0, -0.3, 0.0, 0.8, 2.2, 9.0):
        assert t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-13)
    for p in (0.9, 0.99, 0.999):
        assert t_ppf(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8)


positive = st.floats(0.01, 100.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(positive, min_size=2, max_size=12), st.lists(positive, min_size=2, max_size=12))
def test_the_p_value_is_welchs_on_log_rounds_as_scipy_computes_it(base, cur) -> None:
    stats = pytest.importorskip("scipy.stats")
    logs_b, logs_c = [math.log(x) for x in base], [math.log(x) for x in cur]
    if len(set(logs_b)) < 2 or len(set(logs_c)) < 2:
        return  # scipy's t is undefined on a zero variance; the rule's own degenerate branch is tested below
    d = decide(base, cur, "lower", 0.05)
    ref = stats.ttest_ind(logs_c, logs_b, equal_var=False, alternative="greater")
    assert d.p_worse == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-12)
    assert d.df == pytest.approx(ref.df, rel=1e-9)
    # the interval is the two-sided 1 - 2 alpha interval of the ratio of geometric means
    assert d.lo <= d.ratio <= d.hi and d.level == pytest.approx(1 - 2 * ALPHA)


def test_verdicts_on_examples() -> None:
    base = [1.00, 1.01, 0.99, 1.00, 1.02]
    assert decide(base, [x * 1.3 for x in base], "lower", 0.10).verdict == REGRESSED
    assert decide(base, [x * 0.7 for x in base], "lower", 0.10).verdict == IMPROVED
    assert decide(base, [x * 1.01 for x in base], "lower", 0.10).verdict == UNCHANGED
    # throughput: higher is better, a drop is the worsening
    assert decide([100, 101, 99], [60, 61, 59], "higher", 0.10).verdict == REGRESSED
    # very noisy rounds past the threshold: undecided, not passed
    noisy = decide([1.0, 1.6, 0.7], [1.2, 2.0, 0.8], "lower", 0.05)
    assert noisy.verdict == INCONCLUSIVE and noisy.undecided
    # identical rounds (a zero variance) on both sides
    assert decide([2.0, 2.0], [2.0, 2.0], "lower", 0.05).verdict == UNCHANGED
    assert decide([2.0, 2.0], [3.0, 3.0], "lower", 0.05).verdict == REGRESSED


def test_rounds_with_zeros_are_judged_on_the_raw_scale_not_an_infinite_ratio() -> None:
    """A communication share that is 0 in most rounds: the median went 0 -> 0.01 ('rose inf%' before)."""
    base = [0, 0, 0, 0, 0, 0, 0.01, 0.02, 0.0, 0.01]
    cur = [0, 0, 0, 0.01, 0, 0, 0.01, 0.02, 0.0, 0.0]
    d = decide(base, cur, "lower", 0.10)
    assert d.scale == "raw" and d.verdict != REGRESSED and math.isfinite(d.hi)


def test_a_higher_is_better_threshold_must_be_under_100_percent() -> None:
    with pytest.raises(ValueError, match="under 100%"):
        decide([1, 2], [1, 2], "higher", 1.0)


def test_simulation_targets_hold_on_a_small_sample() -> None:
    """A quick pass over the simulation's worst cells (the full table is pinned by the slow test below)."""
    sim = _simulation()
    cells = sim.simulate(trials=300, rounds=(2, 5, 30), cvs=(0.20,), changes=(0.0, 9.0), thresholds=(0.05,))
    for cell in cells:
        if cell.change == 0:
            assert sim._lower_bound(cell.regressed, cell.trials) <= 0.01, cell
        else:
            assert cell.passed == 0, cell  # a 10x slowdown never passes, at any n


@pytest.mark.slow
def test_the_published_simulation_table_is_what_the_script_computes() -> None:
    """docs/results/gate_simulation.json (and docs/report.md's table) is reproduced exactly from its seed; its
    targets are met where the arithmetic allows (the misses are the ones docs/report.md explains)."""
    sim = _simulation()
    pinned = json.loads((ROOT / "docs" / "results" / "gate_simulation.json").read_text())
    cells = sim.simulate(trials=pinned[0]["trials"])
    assert [c.__dict__ for c in cells] == pinned
    assert sim.table(cells) in (ROOT / "docs" / "report.md").read_text()
    false_alarms = [c for c in cells if c.change == 0]
    assert all(sim._lower_bound(c.regressed, c.trials) <= 0.01 for c in false_alarms)
    assert all(c.passed == 0 for c in cells if c.change >= 9)
    expected_misses = {"threshold 5%, n=2, CV 20%", "threshold 10%, n=2, CV 20%", "threshold 5%, n=3, CV 5%",
                       "threshold 5%, n=5, CV 5%", "threshold 10%, n=3, CV 5%"}
    assert {m.split(":")[0] for m in sim.misses(cells)} == expected_misses


def test_run_noise_widens_a_single_runs_comparison() -> None:
    """Rounds inside one run do not show how far the next launch moves: a run noise of 0.11 turns a tight 30% rise
    from regressed into undecided, and still decides a 10x rise at two rounds a side."""
    from pytest_genai.report.decision import decide

    base, cur = [1.0, 1.01, 0.99], [1.3, 1.31, 1.29]
    assert decide(base, cur, "lower", 0.05).verdict == "regressed"
    noisy = decide(base, cur, "lower", 0.05, run_noise=0.11)
    assert noisy.verdict == "inconclusive" and noisy.undecided and noisy.launch_share > 0.9
    assert decide([1.0, 1.2], [10.0, 12.5], "lower", 0.05, run_noise=0.23).verdict == "regressed"


def test_launch_noise_simulation_on_a_small_sample() -> None:
    """Rounds alone call same-code runs regressed far past alpha when launches move; the run noise brings it back."""
    sim = _simulation()
    cells = {(c.launch_sd, c.floor, c.change): c for c in sim.simulate_launches(trials=400, sds=(0.07,),
                                                                                    changes=(0.0, 9.0))}
    assert cells[(0.07, 0.0, 0.0)].regressed / 400 > 0.05
    assert sim._lower_bound(cells[(0.07, 0.07, 0.0)].regressed, 400) <= 0.01
    assert cells[(0.07, 0.07, 9.0)].passed == 0


@pytest.mark.slow
def test_the_published_launch_simulation_is_what_the_script_computes() -> None:
    sim = _simulation()
    pinned = json.loads((ROOT / "docs" / "results" / "gate_simulation_launches.json").read_text())
    cells = sim.simulate_launches(trials=pinned[0]["trials"])
    assert [c.__dict__ for c in cells] == pinned
    assert sim.launch_table(cells) in (ROOT / "docs" / "report.md").read_text()
    assert all(sim._lower_bound(c.regressed, c.trials) <= 0.01 for c in cells
               if c.change == 0 and c.floor == c.launch_sd)
