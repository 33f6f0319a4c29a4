"""Energy meters with fake readers (no GPU or Gaudi here): counter differences, integrated power, absence."""
import itertools

import pytest

from pytest_genai.runtime import energy


def test_a_counter_meter_measures_the_difference_across_the_call():
    readings = iter([1000.0, 1012.5])
    meter = energy.CounterMeter(lambda: next(readings), "fake_counter")
    assert meter.measure(lambda: "out") == ("out", 12.5)


def test_power_is_integrated_over_the_call_with_trapezoids():
    assert energy.integrate_j([(0.0, 100.0), (1.0, 300.0), (3.0, 300.0)]) == 200.0 + 600.0
    ticks = itertools.count(0.0, 0.5)  # each clock read advances half a second
    meter = energy.PowerMeter(lambda: 200.0, "fake_power", interval_s=60.0, clock=lambda: next(ticks))
    out, joules = meter.measure(lambda: 7)
    assert out == 7 and joules == pytest.approx(200.0 * 0.5)  # first and last sample, 0.5 s apart


def test_metered_records_each_rounds_energy_and_is_the_function_itself_without_a_meter():
    readings = iter([0.0, 3.0, 3.0, 7.0])
    rounds = []
    fn = energy.metered(lambda: None, energy.CounterMeter(lambda: next(readings), "fake"), rounds)
    fn(), fn()
    assert rounds == [3.0, 4.0]
    plain = lambda: None  # noqa: E731
    assert energy.metered(plain, None, rounds) is plain


def test_no_meter_on_the_cpu_and_the_dataflow_kinds():
    for kind in ("cpu", "wse", "rdu", "ipu"):
        assert energy.meter_for(kind, 0) is None


def test_hl_smi_power_is_read_in_watts():
    class Done:
        stdout = "312.5\n"

    calls = []
    read = energy.hl_smi_power_reader(3, run=lambda cmd, **kw: calls.append(cmd) or Done())
    assert read() == 312.5 and calls[0][:3] == ["hl-smi", "-i", "3"]


def test_energy_metrics_are_absent_without_energy_and_per_round_with_it():
    from pytest_genai.compose.quality_result import energy_metrics

    assert energy_metrics(1000, []) == {}
    out = energy_metrics(1000, [2.0, 4.0, 5.0])
    assert out["energy_j"].value == 4.0 and out["energy_j"].source == "measured"
    assert out["tokens_per_j"].value == 250.0 and out["tokens_per_j"].rounds == (500.0, 250.0, 200.0)
