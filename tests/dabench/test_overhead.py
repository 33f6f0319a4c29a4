"""The timer-path-vs-bare comparison (does the suite's timing path cost anything?): the per-round ratio pinned by
examples; one tiny run on the CPU."""
import pytest

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.overhead import PathVsBare, throughput_ratios, timer_path_vs_bare


def test_throughput_ratio_is_bare_seconds_over_path_seconds_per_round():
    assert throughput_ratios([2.0, 1.0], [1.0, 1.0]) == [0.5, 1.0]
    result = PathVsBare(steps=4, path_s=(1.0, 1.1, 1.25), bare_s=(1.0, 1.0, 1.0), reported_step_s=(0.25,) * 3)
    assert result.ratio == pytest.approx(1 / 1.1)
    assert result.bare_step_s == 0.25
    with pytest.raises(ValueError, match="same non-zero number of rounds"):
        throughput_ratios([1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="same non-zero number of rounds"):
        throughput_ratios([], [])
    with pytest.raises(ValueError, match="positive"):
        throughput_ratios([0.0], [1.0])


def test_timer_path_vs_bare_on_the_cpu():
    pytest.importorskip("torch")
    from pytest_genai.devices.device import Device

    cpu = Device(kind="cpu", index=0, name="cpu", generation="cpu")
    result = timer_path_vs_bare(DecoderConfig(layers=1, hidden=64), cpu, rounds=3, steps=2, warmup=1)
    assert len(result.path_s) == len(result.bare_s) == len(result.reported_step_s) == 3
    assert all(r > 0 for r in result.ratios)
    # the timer's median step cannot exceed the whole timed block it sits in
    assert all(0 < rep <= path for rep, path in zip(result.reported_step_s, result.path_s))
    with pytest.raises(ValueError, match="not torch-addressable"):
        timer_path_vs_bare(DecoderConfig(), Device(kind="ipu", index=0, name="ipu", generation="bow-ipu"))
