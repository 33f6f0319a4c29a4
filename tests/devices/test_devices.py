import dataclasses

import pytest
from hypothesis import given, strategies as st

from pytest_genai.devices import Device, ProbeResult, get_spec, load_specs, run_probe
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
     ("NVIDIA GeForce RTX 4090", None, "nvidia-geforce-rtx-4090")],
)
def test_cuda_generation(name, memory, generation) -> None:
    assert cuda_generation(name, memory) == generation


def test_hpu_generation() -> None:
    assert [hpu_generation(n) for n in ("GAUDI", "GAUDI2", "GAUDI3")] == ["gaudi", "gaudi2", "gaudi3"]


def test_probe_errors_are_captured() -> None:
    def boom():
        raise OSError("no driver")

    result = run_probe("hpu", boom)
    assert not result.available and result.reason == "probe failed: OSError: no driver"
    assert "not a ProbeResult" in run_probe("hpu", lambda: 42).reason


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
