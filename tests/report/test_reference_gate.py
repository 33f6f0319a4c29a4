"""The gate on a reference-normalized time (``machine_normalized``): it decides on a contended run where the raw time
cannot, the raw time's regression counts only where it agrees, and it is not compared across devices or reference
kernels."""
from __future__ import annotations

import random

import pytest

from pytest_genai.claims import load_metrics
from pytest_genai.report.compare import (
    INCONCLUSIVE, NOT_COMPARABLE, REGRESSED, UNCHANGED, compare_runs, fails,
)
from pytest_genai.results.registry import metric_info_from
from pytest_genai.results.runs import run_from_json
from pytest_genai.report.thresholds import parse_thresholds
from pytest_genai.runtime.reference import REFERENCE_ID, REFERENCE_LABEL

from .runfiles import bench, run_doc

INFO = metric_info_from(load_metrics())
SPEC = "step_time_s=10%,step_time_per_reference=10%"


def side(step_s: float, ratio: float, *, seed: int, stall: float | None = None, device=("cpu", "cpu"),
         reference: str | None = REFERENCE_ID, spread: float = 0.02, peak_bytes: float = 1e6) -> dict:
    """A Level 1 CPU benchmark with 10 rounds of the raw step time and of the step over the reference."""
    rng = random.Random(seed)
    entry = bench("L2", experiment="dabench", config={"id": "L2"}, device=device,
                  metrics={"step_time_s": step_s, "step_time_per_reference": ratio, "tokens_per_s": 128 / step_s,
                           "achieved_gbs_modeled": 1e-3 / step_s, "peak_bytes_modeled": peak_bytes},
                  units={"step_time_s": "s", "step_time_per_reference": "1", "tokens_per_s": "tokens/s",
                         "achieved_gbs_modeled": "GB/s", "peak_bytes_modeled": "B"},
                  sources={"step_time_s": "measured", "step_time_per_reference": "measured",
                           "tokens_per_s": "measured", "achieved_gbs_modeled": "modeled",
                           "peak_bytes_modeled": "modeled"},
                  labels={REFERENCE_LABEL: reference} if reference else None)
    genai = entry["extra_info"]["genai"]
    genai["metric_rounds"] = {
        "step_time_s": [step_s * (1 + rng.uniform(-spread, spread)) for _ in range(10)],
        "step_time_per_reference": [ratio * (1 + rng.uniform(-spread, spread)) for _ in range(10)],
    }
    if stall is not None:
        genai["attachments"]["cpu_contention"] = {"stall_share_measured": stall, "window_s": 3.0, "method": "PSI"}
    return entry


def rows(base: dict, cur: dict, info=INFO) -> dict:
    comparison = compare_runs(run_from_json(run_doc([base]), "b.json"), run_from_json(run_doc([cur]), "c.json"),
                              info, parse_thresholds(SPEC))
    return {m.metric: m for m in comparison.pairs[0].metrics}


def test_the_pressure_rule_holds_for_the_normalized_time_too() -> None:
    """Beside a CPU load the step slows more than the reference (a same-code pair read 1.19x in the self-check), so a
    contended current run is not called regressed on it, and a contended baseline does not clear one."""
    got = rows(side(1e-3, 2.0, seed=1), side(1.95e-3, 2.6, seed=2, stall=0.5))
    assert got["step_time_per_reference"].status == INCONCLUSIVE
    assert "undecided under contention" in got["step_time_per_reference"].note
    assert got["step_time_s"].status == INCONCLUSIVE and not any(fails(m) for m in got.values())
    cleared = rows(side(1e-3, 2.4, seed=1, stall=0.5), side(1e-3, 2.4, seed=2))["step_time_per_reference"]
    assert cleared.status == INCONCLUSIVE and "a contended baseline cannot clear" in cleared.note


def test_the_normalized_time_decides_between_quiet_runs() -> None:
    got = rows(side(1e-3, 2.0, seed=1), side(1.3e-3, 2.6, seed=2))
    assert got["step_time_per_reference"].status == REGRESSED and fails(got["step_time_per_reference"])
    assert rows(side(1e-3, 2.0, seed=1), side(1e-3, 2.02, seed=2))["step_time_per_reference"].status == UNCHANGED


def test_a_raw_slowdown_the_normalized_time_does_not_show_reads_inconclusive_not_regressed() -> None:
    # an idle machine 1.33x slower between two runs of the same code: the raw rows are past the threshold
    got = rows(side(1e-3, 2.0, seed=1), side(1.33e-3, 2.0, seed=2, peak_bytes=1.33e6))
    for name in ("step_time_s", "tokens_per_s", "achieved_gbs_modeled"):  # a modeled rate: bytes over a measured time
        assert got[name].status == INCONCLUSIVE and got[name].undecided, name
    # the row with rounds says why: the normalized time; the two without rounds are within the point rule's 2x
    assert "step_time_per_reference" in got["step_time_s"].note and "reads unchanged" in got["step_time_s"].note
    # not a speed: a modeled byte count that grew is the code's, whatever the normalized time says
    assert got["peak_bytes_modeled"].status == REGRESSED
    assert [m.metric for m in got.values() if fails(m)] == ["peak_bytes_modeled"]
    # where the normalized time agrees, the raw rows keep their regression
    agreed = rows(side(1e-3, 2.0, seed=1), side(1.33e-3, 2.66, seed=2))
    assert agreed["step_time_s"].status == REGRESSED and agreed["step_time_per_reference"].status == REGRESSED
    # and without a normalized row on one side the raw rows decide as before
    bare = side(1.33e-3, 2.0, seed=2)
    del bare["extra_info"]["genai"]["metrics"]["step_time_per_reference"]
    assert rows(side(1e-3, 2.0, seed=1), bare)["step_time_s"].status == REGRESSED


@pytest.mark.parametrize(("base_kw", "cur_kw", "why"), [
    ({}, {"device": ("cpu", "zen5")}, "a ruler per device"),
    ({}, {"reference": "torch-cpu-mix-v0"}, "different reference kernels"),
    ({"reference": None}, {}, "the baseline names no reference_kernel label"),
])
def test_the_normalized_time_is_not_compared_across_devices_or_reference_kernels(base_kw, cur_kw, why) -> None:
    got = rows(side(1e-3, 2.0, seed=1, **base_kw), side(1.33e-3, 2.0, seed=2, **cur_kw))
    norm = got["step_time_per_reference"]
    assert norm.status == NOT_COMPARABLE and why in norm.note and not norm.gated and not fails(norm)
    # the raw rows compare the hardware (or the code) as before
    assert got["step_time_s"].status == REGRESSED
