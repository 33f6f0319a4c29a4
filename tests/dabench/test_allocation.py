import pytest

from pytest_genai.dabench.allocation import KernelRecord, cpu_allocation_ratio, occupancy_ratio, sm_allocation_ratio


def test_cpu_ratio():
    assert cpu_allocation_ratio(cpu_time_s=1.0, wall_time_s=1.0, cores=2) == 0.5
    assert cpu_allocation_ratio(cpu_time_s=3.6, wall_time_s=1.0, cores=4) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="wall_time_s"):
        cpu_allocation_ratio(1.0, 0.0, 2)
    with pytest.raises(ValueError, match="cores"):
        cpu_allocation_ratio(1.0, 1.0, 0)


def test_kernels_are_time_weighted_and_capped_at_one():
    kernels = [
        KernelRecord("gemm", duration_s=3e-3, grid_blocks=264, est_occupancy=0.5),  # 2 waves: capped at 1
        KernelRecord("layernorm", duration_s=1e-3, grid_blocks=33, est_occupancy=None),  # a quarter of 132 SMs
    ]
    assert sm_allocation_ratio(kernels, sm_count=132) == pytest.approx((3e-3 * 1.0 + 1e-3 * 0.25) / 4e-3)
    assert occupancy_ratio(kernels) == pytest.approx(0.5)  # only kernels that carry an estimate


def test_absent_counters_give_none_not_zero():
    assert sm_allocation_ratio([], sm_count=132) is None
    assert occupancy_ratio([KernelRecord("k", 1e-3, 10)]) is None


def test_kernel_record_validates():
    with pytest.raises(ValueError, match="est_occupancy"):
        KernelRecord("k", 1e-3, 10, est_occupancy=50.0)
    with pytest.raises(ValueError, match="sm_count"):
        sm_allocation_ratio([], sm_count=0)
