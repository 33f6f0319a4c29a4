"""Deployment sweeps on a tiny stack, in-process on the CPU (measured; seconds only)."""
import pytest
import torch

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.devices.device import Device
from pytest_genai.dabench.level2.config import BatchSweepConfig, PrecisionConfig
from pytest_genai.dabench.level2.deploy import BatchSweepResult, PrecisionResult, batch_sweep, precision_sweep

CPU = Device("cpu", 0, "cpu", "cpu")
TINY = DecoderConfig(layers=1, hidden=32, heads=1, seq_len=16, batch=2, mode="train")


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_batch_sweep_measures_every_batch():
    result = batch_sweep(BatchSweepConfig(TINY, batches=(1, 4), warmup=1, repeats=2), CPU)
    assert result.batches == (1, 4)
    assert all(t > 0 for t in result.step_s)
    assert len(result.batch_scaling_efficiency) == 2


def test_batch_result_arithmetic():
    r = BatchSweepResult(batches=(1, 2, 4, 8), step_s=(1.0, 1.0, 2.0, 4.0), min_gain=0.1)
    assert r.samples_per_s == (1.0, 2.0, 2.0, 2.0)
    assert r.plateau_batch == 2 and r.throughput_gain == 2.0


@pytest.mark.parametrize("precision, lo, hi", [("amp_bf16", 1e-5, 0.05), ("bf16", 1e-4, 0.1)])
def test_low_precision_is_really_used(precision, lo, hi):
    result = precision_sweep(PrecisionConfig(TINY, precision, warmup=1, repeats=2), CPU)
    assert lo < result.output_rel_error < hi  # bf16 rounding (8-bit mantissa), neither 0 nor O(1)
    assert result.speedup > 0


def test_precision_speedup_is_time_ratio():
    assert PrecisionResult("amp_bf16", fp32_step_s=2.0, step_s=1.0, output_rel_error=0.01).speedup == 2.0
