import dataclasses

import pytest
from hypothesis import given, strategies as st

from pytest_genai.devices import (Device, DeviceBroken, ProbeResult, broken_message, get_spec, load_specs, run_probe,
                                  skip_reason)
from pytest_genai.devices.probes import cuda_generation, hpu_generation
from pytest_genai.devices.specs import DTYPES, DeviceSpec


def test_every_spec_has_a_source_and_positive_known_numbers() -> None:
    specs = load_specs()
    for name in ("v100", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h100-pcie", "h200", "gaudi", "gaudi2",
                 "gaudi3", "wse-2", "sn30", "bow-ipu"):
        spec = specs[name]
        assert spec.source and len(spec.source) > 20
        for field in ("mem_bandwidth_gbs", "mem_capacity_gb", "onchip_mem_mb", "compute_units"):
            value = getattr(spec, field)
            assert value is None or value > 0
            if value is None and field != "compute_units":
                assert field in spec.unknown or field == "mem_capacity_gb" and spec.kind in ("wse", "rdu", "ipu")


def test_dense_peaks_are_half_the_sparse_datasheet_numbers() -> None:
    # The H100 SXM datasheet lists 1,979 TFLOP/s bf16 *with sparsity*; dense is half.
    assert get_spec("h100-sxm").peak_tflops("bf16") == pytest.approx(1979 / 2, rel=1e-3)
    assert get_spec("a100-sxm4-80gb").peak_tflops("fp8") is None
    assert get_spec("h200").ridge_point_for("bf16") == pytest.approx(989.4e12 / 4.8e12)


def test_unknown_generation_and_dtype_errors_name_the_input() -> None:
    with pytest.raises(ValueError, match="no device spec for generation 'tpu-v9'.*h100-sxm"):
        get_spec("tpu-v9")
    with pytest.raises(ValueError, match="unknown dtype 'int3'"):
        get_spec("h200").peak_tflops("int3")


@pytest.mark.parametrize(
    ("name", "memory", "generation"),
    [("NVIDIA H100 80GB HBM3", None, "h100-sxm"), ("NVIDIA H100 PCIe", None, "h100-pcie"),
     ("NVIDIA H200", None, "h200"), ("NVIDIA A100-SXM4-40GB", 40 * 2**30, "a100-sxm4-40gb"),
     ("NVIDIA A100-SXM4-80GB", 80 * 2**30, "a100-sxm4-80gb"), ("Tesla V100-SXM2-32GB", None, "v100"),
     ("NVIDIA GeForce RTX 4090", None, "nvidia-geforce-rtx-4090"),
     # other parts than the SXM/PCIe cards, each with its own datasheet (memory, clocks, power)
     ("NVIDIA H100 NVL", None, "h100-nvl"), ("NVIDIA GH200 480GB", None, "gh200"), ("NVIDIA H200 NVL", None, "h200-nvl"),
     ("NVIDIA GH200 144G HBM3e", None, "gh200-144gb"), ("NVIDIA GH200", 143 * 10**9, "gh200-144gb"),
     ("NVIDIA GH200", 97 * 10**9, "gh200")],
)
def test_cuda_generation(name, memory, generation) -> None:
    assert cuda_generation(name, memory) == generation
    if "NVIDIA" in name and "GeForce" not in name:  # every datacenter part the probe names has a sourced spec
        from pytest_genai.devices.specs import load_specs

        spec = load_specs()[generation]
        assert spec.source and spec.mem_capacity_gb and spec.peak_tflops("bf16" if "V100" not in name else "fp16")


@pytest.mark.parametrize(("kind", "package"), [("wse", "cerebras/cloud/sdk"), ("hpu", "habana_frameworks/mediapipe")])
def test_an_unrelated_package_of_the_same_name_leaves_the_device_absent(tmp_path, monkeypatch, kind, package) -> None:
    """cerebras-cloud-sdk installs `cerebras`, habana-media-loader `habana_frameworks`: neither is the PyTorch SDK."""
    import sys

    from pytest_genai.devices.probes import PROBES

    root = package.split("/")[0]
    (tmp_path / package).mkdir(parents=True)
    for part in range(1, package.count("/") + 2):
        (tmp_path / "/".join(package.split("/")[:part]) / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == root]:
        monkeypatch.delitem(sys.modules, name)
    try:
        result = run_probe(kind, PROBES[kind])
    finally:  # the stand-in package must not stay imported: later tests ask whether the real one is installed
        for name in [m for m in sys.modules if m.split(".")[0] == root]:
            del sys.modules[name]
    assert not result.available and not result.broken and "not installed" in skip_reason(result)


def test_hpu_generation() -> None:
    assert [hpu_generation(n) for n in ("GAUDI", "GAUDI2", "GAUDI3")] == ["gaudi", "gaudi2", "gaudi3"]


@pytest.mark.parametrize(("name", "generation"), [
    # as `hl-smi` prints them (its table and `hl-smi -Q name -f csv`): part numbers, not "Gaudi2"
    ("HL-225", "gaudi2"), ("HL-288", "gaudi2"), ("HL-325L", "gaudi3"), ("HL-338", "gaudi3"), ("HL-205", "gaudi"),
    (" HL-225 ", "gaudi2"), ("HL-999", "hl-999")])
def test_hpu_generation_from_the_part_numbers_hl_smi_prints(name, generation) -> None:
    assert hpu_generation(name) == generation


def test_driver_evidence_is_a_device_file_or_the_vendor_tool(tmp_path) -> None:
    from pytest_genai.devices.probes import driver_evidence

    nowhere = lambda tool: None  # noqa: E731
    assert driver_evidence("cuda", str(tmp_path), nowhere) is None
    assert driver_evidence("hpu", str(tmp_path), nowhere) is None
    (tmp_path / "nvidia0").touch()
    assert driver_evidence("cuda", str(tmp_path), nowhere) == f"{tmp_path}/nvidia0 exists"
    (tmp_path / "accel").mkdir()
    (tmp_path / "accel" / "accel0").touch()
    assert driver_evidence("hpu", str(tmp_path), nowhere) == f"{tmp_path}/accel/accel0 exists"
    assert driver_evidence("hpu", str(tmp_path / "none"), lambda tool: f"/usr/bin/{tool}").startswith("hl-smi is on")


def _fake_driver(monkeypatch, kind: str) -> None:
    from pytest_genai.devices import probes

    real = probes.driver_evidence
    monkeypatch.setattr(probes, "driver_evidence",
                        lambda k, dev="/dev", which=None: "/dev/nvidia0 exists" if k == kind else real(k, dev, which))


def test_a_cuda_driver_torch_cannot_use_makes_cuda_broken_not_absent(monkeypatch) -> None:
    """torch.cuda.is_available() is False on a node whose driver is present but fails: that must not read as absent
    (``-m cuda`` would go green with an empty JSON)."""
    import torch

    from pytest_genai.devices import probes

    monkeypatch.setattr(torch.version, "cuda", "12.8")
    no_device = lambda kind: {"available": False, "devices": []}  # noqa: E731
    assert not probes.probe_cuda(no_device).broken  # no driver on the node: absent
    _fake_driver(monkeypatch, "cuda")
    result = run_probe("cuda", lambda: probes.probe_cuda(no_device))
    assert result.broken and "sees no CUDA device, but /dev/nvidia0 exists" in result.error
    monkeypatch.setattr(torch.version, "cuda", None)  # a CPU-only torch on a GPU node is broken too
    assert "CPU-only build, but /dev/nvidia0 exists" in run_probe("cuda").error


def test_the_cuda_probe_names_devices_from_a_child_process_not_in_process(monkeypatch) -> None:
    import torch

    from pytest_genai.devices import probes

    def in_process(*args, **kwargs):
        raise AssertionError("the pytest process initialized CUDA")

    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for name in ("is_available", "device_count", "get_device_properties", "get_device_name", "init"):
        monkeypatch.setattr(torch.cuda, name, in_process)
    child = lambda kind: {"available": True, "devices": [  # noqa: E731
        {"index": 0, "name": "NVIDIA H200", "total_memory": 141 * 2**30}]}
    result = probes.probe_cuda(child)
    assert [(d.id, d.generation) for d in result.devices] == [("cuda:0", "h200")]


def test_the_hpu_probe_runs_in_a_child_and_a_present_driver_without_the_bridge_is_broken(monkeypatch) -> None:
    from pytest_genai.devices import probes

    real = probes._missing
    monkeypatch.setattr(probes, "_missing", lambda m: False if m == "habana_frameworks.torch" else real(m))
    child = lambda kind: {"available": True, "devices": [{"index": i, "name": "GAUDI2"} for i in range(8)]}  # noqa
    result = probes.probe_hpu(child)
    assert len(result.devices) == 8 and {d.generation for d in result.devices} == {"gaudi2"}
    _fake_driver(monkeypatch, "hpu")
    broken = run_probe("hpu", lambda: probes.probe_hpu(lambda kind: {"available": False, "devices": []}))
    assert broken.broken and "reports no HPU, but /dev/nvidia0 exists" in broken.error
    monkeypatch.setattr(probes, "_missing", real)
    assert run_probe("hpu").broken  # the driver without the PyTorch bridge: broken, naming the missing stack


def test_the_child_probe_really_runs_and_a_hung_one_is_a_one_line_error(monkeypatch) -> None:
    from pytest_genai.devices import probes

    found = probes._run_child("cuda")  # this machine: torch's CPU build, so no device
    assert found["available"] is False and found["devices"] == []
    monkeypatch.setattr(probes, "_CHILD", "import time; time.sleep(30)")
    with pytest.raises(RuntimeError, match=r"the hpu probe did not answer in 1 s"):
        probes._run_child("hpu", timeout_s=1)
    monkeypatch.setattr(probes, "_CHILD", "import sys; sys.exit('driver says no')")
    with pytest.raises(RuntimeError, match=r"the hpu probe process exited 1: driver says no"):
        probes._run_child("hpu")


def test_a_probe_that_raises_makes_its_kind_broken_not_absent() -> None:
    def boom():
        raise OSError("no driver")

    result = run_probe("hpu", boom)
    assert not result.available and result.broken
    assert result.error == "OSError: no driver"
    message = broken_message(result)
    assert message.startswith("hpu broken (OSError: no driver): ")
    assert '-m "not hpu"' in message and "\n" not in message


def test_a_probe_returning_a_wrong_object_is_broken_too() -> None:
    result = run_probe("hpu", lambda: 42)
    assert result.broken and "the probe returned 42, not a ProbeResult for 'hpu'" in result.error
    assert run_probe("hpu", lambda: ProbeResult("cuda")).broken  # a result for another kind


def test_a_missing_sdk_is_absent_not_broken() -> None:
    result = run_probe("hpu", lambda: ProbeResult("hpu", reason="habana_frameworks is not installed"))
    assert not result.available and not result.broken and result.error is None
    assert skip_reason(result).startswith("hpu: not available (habana_frameworks is not installed); to enable:")


def test_without_torch_the_cpu_is_broken_with_one_line_naming_the_install(monkeypatch) -> None:
    from pytest_genai.devices import probes

    real = probes._missing
    monkeypatch.setattr(probes, "_missing", lambda module: module == "torch" or real(module))
    result = run_probe("cpu")
    assert result.broken and not result.available
    message = broken_message(result)
    assert message.startswith("cpu broken (ModuleNotFoundError: torch is not installed; ")
    assert "pip install torch==2.13.0" in message and "\n" not in message
    monkeypatch.setattr(probes, "_missing", real)
    assert run_probe("cpu").available  # with torch: found


def test_a_broken_result_has_no_devices() -> None:
    with pytest.raises(ValueError, match="has devices and an error"):
        ProbeResult("cpu", (Device("cpu", 0, "x", "cpu"),), error="RuntimeError: x")


def test_the_session_errors_broken_kinds_and_skips_absent_ones() -> None:
    from types import SimpleNamespace

    from pytest_genai.plugin.session import SessionState

    def boom():
        raise RuntimeError("driver exploded")

    probes = {"hpu": boom, "ipu": lambda: ProbeResult("ipu", reason="poptorch is not installed"),
              "cpu": lambda: ProbeResult("cpu", (Device("cpu", 0, "test cpu", "cpu"),))}
    def replace_all(config, probes):  # the pytest_genai_probes hook, as a site plugin would implement it
        probes.clear()
        probes.update(mine)

    mine = probes
    state = SessionState(SimpleNamespace(hook=SimpleNamespace(pytest_genai_probes=replace_all)))
    assert state.skip_reason("hpu") is None  # not skipped: its fixture errors
    assert state.skip_reason("ipu").startswith("ipu: not available (poptorch is not installed)")
    assert state.skip_reason("cpu") is None
    with pytest.raises(DeviceBroken, match=r"^hpu broken \(RuntimeError: driver exploded\)"):
        state.device("hpu")
    with pytest.raises(LookupError) as absent:
        state.device("ipu")
    assert not isinstance(absent.value, DeviceBroken)
    assert state.broken() == {"hpu": "RuntimeError: driver exploded"}


def test_absent_sdks_give_reasons_on_this_machine() -> None:
    for kind in ("hpu", "wse", "rdu", "ipu"):
        result = run_probe(kind)
        assert result.available or result.reason


def test_device_validation_and_cpu_torch_device() -> None:
    with pytest.raises(ValueError, match="Device.kind 'tpu'"):
        Device("tpu", 0, "x", "y")
    cpu = Device("cpu", 0, "host", "cpu")
    assert str(cpu.torch_device) == "cpu"
    assert Device("ipu", 0, "x", "bow-ipu").torch_device is None
    cpu.synchronize()
    assert cpu.peak_memory_bytes() > 0


@given(st.dictionaries(st.sampled_from(DTYPES), st.floats(0.001, 1e6), min_size=1))
def test_spec_peaks_round_trip(peaks) -> None:
    spec = DeviceSpec("x", "cuda", "X", "test", peaks)
    for dtype in DTYPES:
        assert spec.peak_tflops(dtype) == (peaks[dtype] if dtype in peaks else None)
    assert spec.to_json()["peak_tflops"] == peaks


def test_spec_rejects_bad_peaks() -> None:
    with pytest.raises(ValueError, match="peak_tflops.fp16 must be a positive number"):
        DeviceSpec("x", "cuda", "X", "test", {"fp16": -1.0})
    assert dataclasses.is_dataclass(get_spec("h200"))


def test_the_devices_command_lists_a_broken_kind_and_exits_1(monkeypatch, capsys) -> None:
    import json

    import pytest_genai.devices as devices
    from pytest_genai.cli import devices_main

    def boom():
        raise RuntimeError("driver exploded")

    results = {"hpu": run_probe("hpu", boom), "ipu": ProbeResult("ipu", reason="poptorch is not installed")}
    monkeypatch.setattr(devices, "detect_all", lambda: results)
    assert devices_main(["--no-measure"]) == 1
    out = capsys.readouterr().out
    assert "hpu: broken: the probe failed with RuntimeError: driver exploded" in out
    assert "ipu: absent: poptorch is not installed" in out
    assert devices_main(["--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["broken"] == {"hpu": "RuntimeError: driver exploded"} and list(data["absent"]) == ["ipu"]


@pytest.mark.parametrize("initialized", [False, True])
def test_resetting_the_cuda_peak_before_any_cuda_work_is_not_an_error(monkeypatch, initialized) -> None:
    """On the H200, `-k diffusion` alone failed both rows: the first CUDA call of the pytest process was the peak
    reset, and torch answers "Invalid device argument" before a context exists. Before one exists there is nothing
    to reset; after, the reset must happen."""
    torch = pytest.importorskip("torch")
    calls = []

    def reset(index):
        if not initialized:
            raise RuntimeError("Invalid device argument")
        calls.append(index)

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: initialized)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset)
    Device("cuda", 0, "NVIDIA H200", "h200").reset_peak_memory()
    assert calls == ([0] if initialized else [])
