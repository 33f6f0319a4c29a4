"""Energy meters with fake readers (no GPU or Gaudi here): counter differences, integrated power, absence."""
import itertools
import time

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


class SteppedCounter:
    """A fake NVML counter on a fake clock: it adds ``power`` watts' energy in steps every ``period`` seconds, as the
    real one does (on the H200 a forward of milliseconds read 0 J or a whole 13-27 J step). Each read costs
    ``read_s``; ``work(s)`` is a call that keeps the device busy for ``s`` seconds."""

    def __init__(self, power=400.0, period=0.1, read_s=1e-5, phase=0.037):
        self.t, self.power, self.period, self.read_s = phase, power, period, read_s

    def clock(self):
        return self.t

    def read_j(self):
        self.t += self.read_s
        return self.power * self.period * (self.t // self.period)

    def work(self, seconds):
        def call():
            self.t += seconds
        return call


@pytest.mark.parametrize("call_s", [0.003, 0.02, 0.15])
def test_energy_per_call_is_read_over_windows_that_start_and_end_on_counter_steps(call_s):
    fake = SteppedCounter()
    meter = energy.CounterMeter(fake.read_j, "fake_counter")
    once = meter.measure(fake.work(call_s))[1]  # one call read alone: a whole step or nothing
    assert once in (0.0, pytest.approx(40.0)) or call_s >= fake.period
    per_call = energy.per_call_j(fake.work(call_s), meter, windows=3, min_s=0.53, clock=fake.clock)
    assert len(per_call) == 3
    for joules in per_call:  # within one call's worth over a window of >= 0.53 s (not a whole number of steps)
        assert joules == pytest.approx(400.0 * call_s, rel=max(0.02, 1.2 * call_s / 0.53))


def test_a_counter_that_never_moves_reports_nothing_and_returns():
    ticks = itertools.count(0.0, 0.01)
    meter = energy.CounterMeter(lambda: 5.0, "stuck")
    assert energy.per_call_j(lambda: None, meter, clock=lambda: next(ticks), step_wait_s=1.0) == []
    assert energy.per_call_j(lambda: None, None) == []


def test_sampled_power_is_integrated_over_a_window_of_calls():
    fake = SteppedCounter()
    meter = energy.PowerMeter(lambda: 250.0, "fake_power", interval_s=60.0, clock=fake.clock)
    per_call = energy.per_call_j(fake.work(0.01), meter, windows=2, min_s=0.5, clock=fake.clock)
    assert per_call == [pytest.approx(2.5), pytest.approx(2.5)]


def test_no_meter_on_the_cpu_and_the_dataflow_kinds():
    for kind in ("cpu", "wse", "rdu", "ipu"):
        assert energy.meter_for(kind, 0) is None


def test_hl_smi_power_is_read_in_watts():
    class Done:
        stdout = "312.5\n"

    calls = []
    read = energy.hl_smi_power_reader("0000:b3:00.0", run=lambda cmd, **kw: calls.append(cmd) or Done())
    assert read() == 312.5 and calls[0][:3] == ["hl-smi", "-i", "0000:b3:00.0"]


class _FakeHlSmi:
    """hl-smi on an 8-card node whose PCI order differs from the module ids."""

    BUS = {0: "0000:19:00.0", 1: "0000:1a:00.0", 2: "0000:33:00.0", 3: "0000:34:00.0", 4: "0000:9a:00.0",
           5: "0000:b3:00.0", 6: "0000:b4:00.0", 7: "0000:cc:00.0"}

    def __init__(self, modules=(3, 1, 0, 2, 6, 4, 7, 5)):
        self.modules, self.calls = modules, []

    def __call__(self, cmd, **kwargs):
        import types

        self.calls.append(cmd)
        if cmd[1:3] == ["-Q", "module_id,bus_id"]:
            out = "".join(f"{m}, {self.BUS[m]}\n" for m in self.modules)
        else:
            out = f"{100 + sorted(self.BUS.values()).index(cmd[2])}.0\n"
        return types.SimpleNamespace(stdout=out)


def test_hl_smi_reads_the_card_this_process_acquired():
    """``hl-smi -i`` takes a PCI bus id: ``-i 1`` read no card (or another); the process's hpu:1 under
    HABANA_VISIBLE_MODULES=4,5 is module 5, bus 0000:b3:00.0."""
    hl_smi = _FakeHlSmi()
    meter = energy.hpu_meter(1, env={"HABANA_VISIBLE_MODULES": "4,5"}, run=hl_smi, which=lambda name: "/bin/hl-smi")
    assert meter is not None and meter.method == "hl_smi_power_integrated"
    assert hl_smi.calls[-1][:3] == ["hl-smi", "-i", "0000:b3:00.0"]
    assert meter.read_w() == 105.0


def test_hl_smi_with_an_unknown_module_reads_only_a_single_card_node():
    assert energy.hpu_meter(0, env={}, run=_FakeHlSmi(), which=lambda name: "/bin/hl-smi") is None  # 8 cards
    one = _FakeHlSmi(modules=(2,))
    meter = energy.hpu_meter(0, env={}, run=one, which=lambda name: "/bin/hl-smi")
    assert meter is not None and one.calls[-1][2] == "0000:33:00.0"


def test_pyhlml_handle_goes_by_module_not_pci_index():
    import types

    modules = (3, 1, 0, 2)  # PCI order
    fake = types.SimpleNamespace(hlmlDeviceGetCount=lambda: 4, hlmlDeviceGetHandleByIndex=lambda i: f"h{i}",
                                 hlmlDeviceGetModuleID=lambda h: modules[int(h[1:])])
    assert energy.pyhlml_handle(fake, 2) == "h3"
    assert energy.pyhlml_handle(fake, None) is None
    assert energy.gaudi_module_id(1, {"HABANA_VISIBLE_MODULES": "6, 2"}) == 2
    assert energy.gaudi_module_id(0, {}) is None


def test_energy_metrics_are_absent_without_energy_and_per_round_with_it():
    from pytest_genai.runtime.energy import energy_metrics

    assert energy_metrics(1000, []) == {}
    out = energy_metrics(1000, [2.0, 4.0, 5.0])
    assert out["energy_j"].value == 4.0 and out["energy_j"].source == "measured"
    assert out["tokens_per_j"].value == 250.0 and out["tokens_per_j"].rounds == (500.0, 250.0, 200.0)


def _fake_pynvml(counters, models=("NVIDIA H100 80GB HBM3",) * 8):
    import types

    uuids = {f"index:{i}": f"GPU-{i}{i}{i}{i}-{i}" for i in range(len(models))}

    def by_uuid(u):
        if u not in uuids.values() and not u.startswith("GPU-3232") and u != "GPU-aaaa":
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return f"uuid:{u}"

    nvml = types.ModuleType("pynvml")
    nvml.nvmlInit = lambda: None
    nvml.nvmlDeviceGetCount = lambda: len(models)
    nvml.nvmlDeviceGetHandleByIndex = lambda i: f"index:{i}"
    nvml.nvmlDeviceGetHandleByUUID = by_uuid
    nvml.nvmlDeviceGetUUID = lambda handle: uuids[handle].encode()  # bytes, as older bindings return
    nvml.nvmlDeviceGetName = lambda handle: models[int(handle.split(":")[1])]
    nvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: counters[handle]
    return nvml


@pytest.mark.parametrize("torch_uuid, visible, expected", [
    ("3232f831-2440", "5,6", "uuid:GPU-3232f831-2440"),  # torch names the device: by UUID, whatever is visible
    (None, "5,6", "index:5"),  # no UUID from torch: CUDA's device 0 is the first visible, NVML's 5
    (None, "GPU-aaaa,GPU-bbbb", "uuid:GPU-aaaa"),
    (None, None, "index:0"),
    (None, "GPU-5555", "index:5"),  # a UUID prefix, as CUDA accepts: the one GPU whose UUID it starts
])
def test_the_energy_meter_reads_the_gpu_cuda_runs_on(monkeypatch, torch_uuid, visible, expected):
    """Under CUDA_VISIBLE_DEVICES=5, CUDA's device 0 is NVML's GPU 5; taken by ordinal, the meter read GPU 0."""
    import sys
    import types

    counters = {"index:0": 1000.0, "index:5": 5000.0, "uuid:GPU-3232f831-2440": 7000.0, "uuid:GPU-aaaa": 9000.0}
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(counters))
    torch = pytest.importorskip("torch")

    def props(index):
        if torch_uuid is None:
            raise RuntimeError("no CUDA here")
        return types.SimpleNamespace(uuid=torch_uuid)

    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    meter = energy.nvml_meter(0)
    assert meter is not None and meter.read_j() == counters[expected] / 1000.0


@pytest.mark.parametrize("order, expected", [(None, None), ("PCI_BUS_ID", "index:1")])
def test_on_mixed_gpus_a_cuda_ordinal_meters_nothing_unless_cuda_counts_in_nvml_order(monkeypatch, order, expected):
    """CUDA's default order puts the fastest GPU first; NVML's is the PCI bus order: ordinal 1 may be another GPU."""
    import sys

    counters = {"index:0": 1000.0, "index:1": 2000.0}
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(counters, ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 PCIe")))
    torch = pytest.importorskip("torch")

    def no_cuda(index):
        raise RuntimeError("no CUDA here")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_cuda)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    if order is None:
        monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    else:
        monkeypatch.setenv("CUDA_DEVICE_ORDER", order)
    meter = energy.nvml_meter(0)
    assert (meter and meter.read_j() * 1000.0) == (expected and counters[expected])


def _hl_smi(answers):
    """hl-smi's power reader over a fake hl-smi that answers ``answers`` in turn (then the last one again)."""
    answers = list(answers)

    class Done:
        def __init__(self, stdout):
            self.stdout = stdout

    def run(cmd, **kw):
        return Done(answers.pop(0) if len(answers) > 1 else answers[0])

    return energy.hl_smi_power_reader(0, run=run)


@pytest.mark.parametrize("answers", [["250.0\n", "N/A\n"], ["250.0\n", "inf\n"], ["inf\n"], ["250.0\n", ""]])
def test_a_meter_fault_on_the_closing_read_leaves_energy_absent_with_its_reason(answers):
    """`N/A` on hl-smi's closing read ended the benchmark with a ValueError; an infinite reading recorded
    tokens_per_j = 0 as measured."""
    fake = SteppedCounter()
    meter = energy.PowerMeter(_hl_smi(answers), "hl_smi_power_integrated", interval_s=60.0, clock=fake.clock)
    with pytest.warns(energy.EnergyAbsent, match="hl_smi_power_integrated"):
        assert energy.per_call_j(fake.work(0.01), meter, windows=2, min_s=0.5, clock=fake.clock) == []
    assert meter.fault and "energy not recorded" in meter.fault
    assert energy.energy_metrics(100, [float("inf")]) == {}


def test_a_meter_fault_mid_window_is_no_thread_traceback_and_no_silent_gap(monkeypatch):
    """`N/A` from the sampling thread printed a thread traceback, and the gap was integrated as if power held."""
    import threading

    hooked = []
    monkeypatch.setattr(threading, "excepthook", lambda args: hooked.append(args))
    reads = itertools.count()

    def read_w():  # the first reads answer; then the meter faults in the sampling thread
        if next(reads) > 2:
            raise ValueError("could not convert string to float: 'N/A'")
        return 250.0

    meter = energy.PowerMeter(read_w, "fake_power", interval_s=0.001)
    with pytest.warns(energy.EnergyAbsent, match="N/A"):
        assert energy.per_call_j(lambda: time.sleep(0.002), meter, windows=1, min_s=0.05) == []
    assert hooked == [] and "N/A" in meter.fault


def test_a_counter_that_faults_leaves_energy_absent():
    fake = SteppedCounter()
    reads = itertools.count()
    meter = energy.CounterMeter(lambda: fake.read_j() if next(reads) < 5 else float("nan"), "fake_counter")
    with pytest.warns(energy.EnergyAbsent, match="fake_counter answered nan"):
        assert energy.per_call_j(fake.work(0.01), meter, windows=2, min_s=0.5, clock=fake.clock) == []
