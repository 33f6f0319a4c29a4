"""What the diffusion benchmarks record (pytest_genai.diffusion.results): every metric name and its source pinned,
the rounds the DDP timing claims are judged on, MFU and peak memory only when known; every metric is registered and
its source is one the recorder accepts. Summaries are built by hand: no training runs."""
import pytest

from pytest_genai.diffusion.ddp import DdpSummary
from pytest_genai.diffusion.results import run_peak_tflops, scaling_result, throughput_result
from pytest_genai.diffusion.train import TrainResult
from pytest_genai.plugin.recorder import result_problems

THROUGHPUT = dict.fromkeys(("images_per_s", "step_time_s", "achieved_tflops", "mfu", "loss_start", "loss_end",
                            "peak_memory_bytes"), "measured")
SCALING = {"world_size": "config", **dict.fromkeys(
    ("images_per_s", "baseline_images_per_s", "step_time_s", "baseline_step_time_s", "scaling_throughput_ratio",
     "scaling_efficiency", "loss_start", "loss_end"), "measured")}

RUN = TrainResult(step_times_s=(0.2, 0.1, 0.3), losses=(1.0, 0.9, 0.5, 0.4, 0.3), images_per_step=4,
                  flops_per_step=2e11)


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


@pytest.mark.parametrize("peak", [10.0, None])
@pytest.mark.parametrize("memory", [4096, None])
def test_throughput_result(peak, memory):
    result = throughput_result(RUN, peak, memory)
    assert not result_problems(result)
    expected = {k: v for k, v in THROUGHPUT.items()
                if (peak or k != "mfu") and (memory is not None or k != "peak_memory_bytes")}
    assert sources(result) == expected
    m = {name: x.value for name, x in result.metrics.items()}
    assert m["step_time_s"] == 0.2 and m["images_per_s"] == 4 / 0.2
    assert m["achieved_tflops"] == pytest.approx(1.0)
    assert m["loss_start"] == 1.0 and m["loss_end"] == pytest.approx(0.4)
    if peak:
        assert m["mfu"] == pytest.approx(0.1)
    if memory is not None:
        assert m["peak_memory_bytes"] == 4096
    # every timed step's figures are rounds: the gate and generation claims are judged on their interval
    assert result.metrics["images_per_s"].rounds == pytest.approx(tuple(4 / t for t in RUN.step_times_s))
    assert result.metrics["step_time_s"].rounds == RUN.step_times_s
    tflops = tuple(RUN.flops_per_step / t / 1e12 for t in RUN.step_times_s)
    assert result.metrics["achieved_tflops"].rounds == pytest.approx(tflops)
    if peak:
        assert result.metrics["mfu"].rounds == pytest.approx(tuple(t / peak for t in tflops))
    timed = {"images_per_s", "step_time_s", "achieved_tflops", "mfu"}
    assert all(x.rounds is None for name, x in result.metrics.items() if name not in timed)  # losses, memory
    assert result.labels == {} and result.attachments == {}


def test_scaling_result_with_every_rounds_ratio():
    s = DdpSummary(world_size=2, images_per_step=16, step_s=0.12, baseline_images_per_step=8, baseline_step_s=0.05,
                   losses=(1.0, 0.8, 0.6, 0.5), flops_per_step=1e9, step_rounds=(0.11, 0.12, 0.13),
                   baseline_rounds=(0.05, 0.06, 0.05))
    result = scaling_result(s)
    assert not result_problems(result)
    assert sources(result) == SCALING
    m = result.metrics
    assert m["world_size"].value == 2 and m["images_per_s"].value == pytest.approx(16 / 0.12)
    assert m["scaling_throughput_ratio"].value == pytest.approx(s.scaling_throughput_ratio)
    assert m["scaling_throughput_ratio"].rounds == pytest.approx(tuple(s.scaling_ratio_rounds))
    assert m["scaling_efficiency"].rounds == pytest.approx(tuple(r / 2 for r in s.scaling_ratio_rounds))
    # each side's own rounds, so the gate judges the step times and throughputs on intervals
    assert m["step_time_s"].rounds == (0.11, 0.12, 0.13) and m["baseline_step_time_s"].rounds == (0.05, 0.06, 0.05)
    assert m["images_per_s"].rounds == pytest.approx((16 / 0.11, 16 / 0.12, 16 / 0.13))
    assert m["baseline_images_per_s"].rounds == pytest.approx((8 / 0.05, 8 / 0.06, 8 / 0.05))
    assert m["loss_end"].rounds is None
    assert m["loss_end"].value == pytest.approx((0.8 + 0.6 + 0.5) / 3)
    assert result.labels == {} and result.attachments == {}


def test_a_one_thread_cpu_run_is_measured_against_one_threads_peak():
    """The CPU's peak is measured on all its threads; the CPU diffusion run pins one (its MFU read 1/threads)."""
    assert run_peak_tflops(0.4, "cpu", 2, threads=1) == pytest.approx(0.2)
    assert run_peak_tflops(0.4, "cpu", None, threads=1) is None
    assert run_peak_tflops(900.0, "cuda", None, threads=1) == 900.0
    assert run_peak_tflops(None, "cpu", 2, threads=1) is None
