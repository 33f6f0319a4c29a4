"""Kernel records from a Kineto Chrome trace, built to the format Kineto's output_json.cpp writes."""
import pytest

from pytest_genai.dabench.allocation import sm_allocation_ratio
from pytest_genai.dabench.kernels import kernel_records

TRACE = {
    "schemaVersion": 1,
    "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 50, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 300.0,
         "args": {"device": 0, "stream": 7, "grid": [132, 2, 1], "block": [384, 1, 1],
                  "registers per thread": 168, "shared memory": 232448, "blocks per SM": 2.0,
                  "warps per SM": 24.0, "est. achieved occupancy %": 19}},
        {"ph": "X", "cat": "kernel", "name": "layer_norm_kernel", "ts": 320, "dur": 100.0,
         "args": {"grid": [33, 1, 1], "block": [256, 1, 1]}},
        {"ph": "f", "cat": "ac2g", "name": "flow", "ts": 5},
    ],
}


def test_parses_kernels_only():
    records = kernel_records(TRACE)
    assert [r.name for r in records] == ["sm90_xmma_gemm", "layer_norm_kernel"]
    gemm, ln = records
    assert gemm.grid_blocks == 264 and gemm.block_threads == 384
    assert gemm.duration_s == pytest.approx(300e-6)
    assert gemm.est_occupancy == pytest.approx(0.19)
    assert ln.est_occupancy is None


def test_allocation_from_the_trace():
    # gemm covers all 132 SMs for 300 us, layernorm a quarter of them for 100 us.
    assert sm_allocation_ratio(kernel_records(TRACE), 132) == pytest.approx((300 + 25) / 400)


def test_older_fraction_key():
    trace = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1,
                              "args": {"grid": [1, 1, 1], "est. achieved occupancy": 0.75}}]}
    assert kernel_records(trace)[0].est_occupancy == 0.75


def test_not_a_trace():
    with pytest.raises(ValueError, match="traceEvents"):
        kernel_records({"events": []})
