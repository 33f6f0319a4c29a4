"""compose() on fixed measurements (pure), and measure() end to end on a tiny config on the CPU."""
import dataclasses

import pytest

from pytest_genai.dabench import counts, level1
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.roofline import Ceilings

CFG = DecoderConfig(layers=2, hidden=64, heads=1, seq_len=32)
ROOFLINE_NAMES = ("flops", "bytes_moved_modeled", "arithmetic_intensity_modeled", "achieved_tflops", "achieved_gbs_modeled",
                  "efficiency_modeled",
                  "ceiling_tflops_measured", "ceiling_gbs_measured", "ceiling_tflops_spec", "ceiling_gbs_spec")


def _meas(**kw):
    base = dict(step_s=1e-3, layer_s=(4e-4, 5e-4), class_s={"matmul": 2e-4, "attention": 1e-4, "elementwise": 1e-4},
                allocation=level1.Allocation(0.5, "test counter"))
    base.update(kw)
    return level1.Measurements(**base)


def test_compose_records_the_roofline_contract_and_sources():
    result = level1.compose(CFG, _meas(), Ceilings(1.0, 100.0, "measured"), Ceilings(2.0, 50.0, "spec"))
    m = result.metrics
    for name in ROOFLINE_NAMES:
        assert name in m, name
    work = counts.stack_counts(CFG)
    assert m["flops"] == work.flops and m["bytes_moved_modeled"] == work.bytes
    assert m["achieved_tflops"] == pytest.approx(work.flops / 1e-3 / 1e12)
    assert m["load_imbalance"] == pytest.approx(0.45 / 0.5)
    assert m["load_imbalance_min_over_max"] == pytest.approx(0.8)
    assert m["allocation_ratio"] == 0.5
    assert result.labels["bound"] in ("compute", "memory")
    assert m["compute_bound_modeled"] == (1.0 if result.labels["bound"] == "compute" else 0.0)
    assert "synchronized wall" in result.labels["li_definition"]
    assert {"matmul_efficiency_modeled", "attention_compute_bound_modeled", "elementwise_achieved_gbs_modeled"} <= set(m)
    # Everything resting on the minimal-traffic byte model is modeled, and every modeled name says so.
    modeled = {k for k, v in result.sources.items() if v == "modeled"}
    assert modeled == {k for k in m if k.endswith("_modeled")}
    assert {"bytes_moved_modeled", "arithmetic_intensity_modeled", "compute_bound_modeled",
            "matmul_bytes_moved_modeled"} <= modeled
    assert set(result.sources) == set(m)


def test_li_gets_the_interval_of_its_layer_rounds_and_a_claim_is_judged_on_it():
    from pytest_genai.claims import load_claims
    from pytest_genai.claims.check import check_value

    def judged(layer_rounds, **kw):
        medians = tuple(sorted(r)[len(r) // 2] for r in layer_rounds)
        result = level1.compose(CFG, _meas(layer_s=medians, layer_rounds=layer_rounds),
                                Ceilings(1.0, 100.0, "measured"), None)
        interval = result.intervals["load_imbalance"]
        assert interval.lo <= result.metrics["load_imbalance"] <= interval.hi
        return check_value(claim, result.metrics["load_imbalance"], interval, **kw)

    claim = next(c for c in load_claims() if c.id == "B1.identical_layers_li")
    assert claim.timing  # a timed LI: one value decides nothing, and a contended machine cannot fail it
    even = (5e-4, 5.1e-4, 4.9e-4, 5e-4, 5e-4)
    assert judged((even, even)).verdict == "pass"
    lopsided = (even, tuple(1.3 * t for t in even))
    assert judged(lopsided).verdict == "fail"
    assert judged(lopsided, stall_share=0.6).verdict == "inconclusive"
    assert judged((even, (5e-4, 7e-4, 5e-4, 7.5e-4, 4.9e-4))).verdict == "inconclusive"  # a noisy spell: either side
    assert check_value(claim, 0.95).verdict == "inconclusive"  # without rounds
    assert "load_imbalance" not in level1.compose(CFG, _meas(), Ceilings(1.0, 100.0, "measured"), None).intervals


def test_the_step_rates_carry_one_value_per_timed_round():
    steps = (1e-3, 2e-3, 4e-3)
    result = level1.compose(CFG, _meas(step_s=2e-3, step_rounds=steps), Ceilings(1.0, 100.0, "measured"),
                            Ceilings(2.0, 50.0, "spec"))
    work = counts.stack_counts(CFG)
    r, m = result.rounds, result.metrics
    assert r["step_time_s"] == steps
    assert r["achieved_tflops"] == pytest.approx([work.flops / t / 1e12 for t in steps])
    assert r["ceiling_fraction_tflops"] == pytest.approx([work.flops / t / 1e12 for t in steps])  # a 1 TFLOP/s roof
    assert r["achieved_gbs_modeled"] == pytest.approx([work.bytes / t / 1e9 for t in steps])
    assert {"efficiency_modeled", "efficiency_spec"} <= set(r)
    for name in ("step_time_s", "achieved_tflops", "achieved_gbs_modeled", "efficiency_modeled", "efficiency_spec",
                 "ceiling_fraction_tflops"):
        assert m[name] == pytest.approx(sorted(r[name])[1]), name  # the value is the median round's
    assert "achieved_tflops" not in level1.compose(CFG, _meas(), Ceilings(1.0, 100.0, "measured"), None).rounds


def test_bound_flips_with_the_ridge():
    work = counts.stack_counts(CFG)
    intensity = work.flops / work.bytes
    low_ridge = Ceilings(1.0, 1e12 / (0.5 * intensity) / 1e9, "measured")  # ridge at half the intensity
    high_ridge = Ceilings(1.0, 1e12 / (2 * intensity) / 1e9, "measured")
    assert level1.compose(CFG, _meas(), low_ridge, None).labels["bound"] == "compute"
    assert level1.compose(CFG, _meas(), high_ridge, None).labels["bound"] == "memory"


def test_absent_counter_means_absent_metric():
    result = level1.compose(CFG, _meas(allocation=None), Ceilings(1.0, 100.0, "measured"), None)
    assert "allocation_ratio" not in result.metrics
    assert "ceiling_tflops_spec" not in result.metrics


def test_measure_on_the_cpu():
    pytest.importorskip("torch")
    from pytest_genai.devices.device import Device

    cpu = Device(kind="cpu", index=0, name="cpu", generation="cpu")
    cfg = dataclasses.replace(CFG, mode="train")
    meas = level1.measure(cfg, cpu, repeats=3)
    assert meas.step_s > 0 and len(meas.layer_s) == cfg.layers
    assert meas.layer_clock == "process_cpu" and len(meas.layer_wall_s) == cfg.layers
    assert set(meas.class_s) == {"matmul", "attention", "elementwise"}
    assert set(meas.class_rounds) == set(meas.class_s) and all(len(r) == 3 for r in meas.class_rounds.values())
    import statistics

    assert all(meas.class_s[c] == statistics.median(meas.class_rounds[c]) for c in meas.class_s)
    import os

    import torch

    # allocation is the static assignment (threads given / cores), like a compiler's unit assignment; how busy the
    # cores were is utilisation, recorded apart
    cores = len(os.sched_getaffinity(0))
    assert meas.allocation.ratio == min(torch.get_num_threads(), cores) / cores
    assert 0 < meas.allocation.utilization <= 1.05
    result = level1.compose(cfg, meas, Ceilings(0.1, 10.0, "measured"), None)
    assert result.metrics["cpu_utilization"] == meas.allocation.utilization
    # five windows, their median the value: the gate judges it on their interval
    assert len(meas.allocation.utilization_rounds) == level1.UTILIZATION_WINDOWS
    assert meas.allocation.utilization == statistics.median(meas.allocation.utilization_rounds)
    assert result.rounds["cpu_utilization"] == meas.allocation.utilization_rounds
    assert result.metrics["load_imbalance"] > 0.5  # identical layers, process CPU time
    assert len(meas.step_rounds) == 3 and meas.step_s == statistics.median(meas.step_rounds)
    assert all(len(r) == level1.LAYER_REPEATS for r in meas.layer_rounds)
    assert [len(r) for r in meas.layer_wall_rounds] == [level1.LAYER_REPEATS] * cfg.layers
    assert {"load_imbalance", "load_imbalance_min_over_max", "load_imbalance_wall"} <= set(result.intervals)
    # the max and mean of the same layer medians carry the same bootstrap's intervals, each around its own value
    for name in ("layer_time_max_s", "layer_time_mean_s"):
        interval = result.intervals[name]
        assert interval.lo <= result.metrics[name] <= interval.hi and interval.n == level1.LAYER_REPEATS
    one = level1.measure(cfg, cpu, time_step=lambda step: (step(), 0.25)[1])  # a median alone: no step rounds
    assert one.step_s == 0.25 and one.step_rounds == ()
    with pytest.raises(ValueError, match="time_step returned no rounds"):
        level1.measure(cfg, cpu, time_step=lambda step: [])


def test_measure_needs_a_torch_device():
    from pytest_genai.devices.device import Device

    with pytest.raises(ValueError, match="not torch-addressable"):
        level1.measure(CFG, Device(kind="ipu", index=0, name="ipu", generation="bow-ipu"))


@pytest.mark.slow
def test_the_level1_benchmark_records_energy_per_step_where_the_device_reports_it(tmp_path):
    """End to end through benchmarks/test_dabench_level1.py with a fake stepped energy counter standing in for NVML
    on the CPU (50 W, 10 ms steps on the wall clock): the row gets `energy_j` per step near 50 W times its step time,
    `tokens_per_j` and the meter's name; without a meter (the plain CPU) it records no energy at all."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "fakemeter.py").write_text(
        "import math, time\n"
        "from pytest_genai.runtime import energy\n"
        "def pytest_configure(config):\n"
        "    energy.meter_for = lambda kind, index: energy.CounterMeter(\n"
        "        lambda: 50.0 * 0.01 * math.floor(time.perf_counter() / 0.01), 'fake_counter')\n",
        encoding="utf-8")
    repo = Path(__file__).resolve().parents[2]
    rows = {}
    for plugin in ("fakemeter", None):
        out = tmp_path / f"{plugin}.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "", "benchmarks/test_dabench_level1.py", "-k",
             "test_level1_cpu and L2-h64-a1-s128-b1-fp32-forward", "-q", "-p", "no:cacheprovider",
             *(["-p", plugin] if plugin else []), f"--benchmark-json={out}"],
            cwd=repo, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        (bench,) = json.loads(out.read_text())["benchmarks"]
        rows[plugin] = bench["extra_info"]["genai"]
    metrics = rows["fakemeter"]["metrics"]
    step_s = metrics["step_time_s"]
    # the windows' mean call time against the timed rounds' median: the same step, but not the same seconds on a
    # shared machine (the windows' arithmetic is pinned exactly in tests/runtime/test_energy.py)
    assert 0.2 < metrics["energy_j"] / (50.0 * step_s) < 5
    assert metrics["tokens_per_j"] == pytest.approx(128 / metrics["energy_j"])
    assert rows["fakemeter"]["labels"]["energy_method"] == "fake_counter"
    assert "energy_j" not in rows[None]["metrics"] and "energy_method" not in rows[None]["labels"]
