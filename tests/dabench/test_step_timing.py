"""A step is not shorter than its own layers: the ratio, the physics claim that judges it, the mechanism that breaks
it (a step timed without waiting for queued work), and the CUDA event timer that keeps it from recurring."""
import queue
import threading
import time

import pytest

from pytest_genai.claims import check_value, load_claims
from pytest_genai.stats import median_interval
from pytest_genai.dabench import level1
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.roofline import Ceilings
from pytest_genai.runtime.timing import time_callable, time_cuda_events

CLAIM = {c.id: c for c in load_claims()}["B1.step_not_shorter_than_layers"]
CFG = DecoderConfig(layers=2, hidden=64, heads=1, seq_len=32)


def test_the_ratio_is_the_step_over_its_layers_summed():
    assert level1.step_over_layer_sum(1.0, (0.25, 0.25)) == 2.0
    with pytest.raises(ValueError, match="positive step time and layer times"):
        level1.step_over_layer_sum(1.0, ())


def test_compose_reads_the_ratio_on_the_wall_clock_with_its_rounds():
    meas = level1.Measurements(step_s=1e-3, layer_s=(9e-4, 9e-4), class_s={}, allocation=None,
                               layer_clock="process_cpu", layer_wall_s=(4e-4, 6e-4), step_rounds=(1e-3, 2e-3, 5e-4))
    result = level1.compose(CFG, meas, Ceilings(1.0, 100.0, "measured"), None)
    assert result.metrics["step_over_layer_sum"] == pytest.approx(1.0)  # wall layers, not process CPU ones
    assert result.rounds["step_over_layer_sum"] == pytest.approx((1.0, 2.0, 0.5))
    assert result.sources["step_over_layer_sum"] == "measured"


class QueuedDevice:
    """A device with a work queue, as CUDA's stream: ``launch`` returns at once, ``synchronize`` waits for the work."""

    def __init__(self) -> None:
        self.work: queue.Queue = queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            seconds = self.work.get()
            time.sleep(seconds)
            self.work.task_done()

    def launch(self, seconds: float) -> None:
        self.work.put(seconds)

    def synchronize(self) -> None:
        self.work.join()


def _verdict(step_rounds, layer_s):
    ratios = [level1.step_over_layer_sum(t, layer_s) for t in step_rounds]
    return check_value(CLAIM, sorted(ratios)[len(ratios) // 2], median_interval(ratios))


def test_a_step_timed_without_waiting_for_its_work_reads_shorter_than_its_layers_and_fails_the_claim():
    """The H200 artefact's mechanism on the CPU: the layers are timed synchronized, the step is not."""
    device = QueuedDevice()
    layer_s = 0.01
    layers = [lambda: device.launch(layer_s)] * 4

    def step() -> None:
        for layer in layers:
            layer()

    timed_layers = [time_callable(f, sync=device.synchronize, repeats=3).median_s for f in layers]
    unsynced = time_callable(step, sync=None, warmup=0, repeats=5).samples
    device.synchronize()
    synced = time_callable(step, sync=device.synchronize, repeats=5).samples
    broken, honest = _verdict(unsynced, timed_layers), _verdict(synced, timed_layers)
    assert broken.verdict == "fail" and "< min 0.8" in broken.message
    assert honest.verdict == "pass"


def test_the_claim_applies_on_every_device_and_fails_the_h200_reading():
    assert CLAIM.basis == "physics" and CLAIM.devices == () and CLAIM.timing
    # L2-h256 forward on the H200: 0.40 ms step rounds against 0.64 ms of its own layer medians
    assert _verdict([0.40e-3, 0.39e-3, 0.41e-3, 0.40e-3, 0.40e-3], [0.32e-3, 0.32e-3]).verdict == "fail"


class FakeEvent:
    def __init__(self, log, clock):
        self.log, self.clock, self.t = log, clock, None

    def record(self):
        self.t = self.clock[0]
        self.log.append("record")

    def synchronize(self):
        self.log.append("event-sync")

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


def test_cuda_events_warm_up_then_time_the_queued_work_in_seconds():
    log, clock = [], [0.0]

    def step():
        log.append("step")
        clock[0] += 0.002  # the work the stream runs between the two events

    timing = time_cuda_events(step, index=1, warmup=3, repeats=2, event=lambda: FakeEvent(log, clock),
                              synchronize=lambda index: log.append(f"sync{index}"))
    assert timing.samples == pytest.approx((0.002, 0.002))
    assert log == ["step"] * 3 + ["sync1", "record", "step", "record", "event-sync"] * 2


def test_measure_times_a_cuda_step_with_events_after_warm_up(monkeypatch):
    calls = {}

    def fake_events(fn, *, index, warmup, repeats):
        calls.update(index=index, warmup=warmup, repeats=repeats)
        return level1_timing((1e-3,) * repeats)

    from pytest_genai.runtime import timing

    def level1_timing(samples):
        return timing.Timing(samples)

    monkeypatch.setattr(timing, "time_cuda_events", fake_events)

    class Cuda:
        kind, index = "cuda", 2

    assert level1.time_step_on(Cuda(), lambda: None, warmup=1, repeats=4).samples == (1e-3,) * 4
    assert calls == {"index": 2, "warmup": timing.EVENT_WARMUP, "repeats": 4}
