"""What the fine-tuning benchmarks record (pytest_genai.train.results): every metric name and its source pinned per
benchmark, the labels and attachments, the comparison builders with and without their baseline runs, the MFU
branches; every metric is registered and its source is one the recorder accepts. Synthetic summaries: nothing
launched."""
import dataclasses
import statistics

import pytest

from pytest_genai.devices.device import Device
from pytest_genai.devices.specs import DeviceSpec
from pytest_genai.train import metrics
from pytest_genai.train.archs import get_arch
from pytest_genai.train.bare_ddp import BareRun, launcher_vs_bare
from pytest_genai.train.config import ThroughputConfig
from pytest_genai.train.flops import training_flops_per_step
from pytest_genai.train.lora import LoraSpec
from pytest_genai.train.planner import PLANNER_TOLERANCE, Workload, estimate, plan
from pytest_genai.train.results import (NO_DDP_COMPARISON, ddp_comparison_result, flash_attention_result,
                                        launcher_vs_bare_result, throughput_result, training_mfu,
                                        wikitext_result)
from pytest_genai.train.run import RunSummary
from pytest_genai.plugin.recorder import result_problems

CFG = ThroughputConfig(model="llama-3.1-8b", steps=6, warmup=2)
LORA = dataclasses.replace(CFG, lora=LoraSpec())
THROUGHPUT = {"tokens_per_s": "measured", "samples_per_s": "measured", "step_time_s": "measured",
              "launch_wall_s": "measured", "loss_start": "measured", "loss_end": "measured",
              "flops_per_step_modeled": "modeled", "flop_counter_ratio_modeled": "modeled", "achieved_tflops": "measured",
              "peak_tensor_bytes": "measured", "peak_tensor_bytes_predicted": "modeled",
              "peak_tensor_bytes_over_predicted": "modeled"}
WIKITEXT = {"eval_loss_start": "measured", "eval_loss_end": "measured", "eval_loss_drop": "measured",
            "tokens_per_s": "measured", "step_time_s": "measured", "loss_start": "measured", "loss_end": "measured",
            "launch_wall_s": "measured"}
CPU_SPEC = DeviceSpec("cpu-test", "cpu", "test CPU", "measured", {"fp32": 1.0, "bf16": 2.0}, threads=4)
CPU = Device("cpu", 0, "test CPU", "cpu-test", CPU_SPEC)
GPU = Device("cuda", 0, "test GPU", "gpu-test",
             DeviceSpec("gpu-test", "cuda", "test GPU", "datasheet", {"fp32": 10.0, "bf16": 100.0}))


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


def assert_recordable(result):
    """Each metric is a Measurement with an explicit source the recorder accepts, and registered (so its unit is)."""
    assert result_problems(result) == []


def summary(step_s=(9.0, 9.0, 0.5, 0.4, 0.5, 0.6), world=2, seq_len=128, micro_batch=2, extra=None, **kw):
    global_batch = micro_batch * world
    median = metrics.median_step_s(step_s, 2)
    fields = dict(world_size=world, global_batch=global_batch, seq_len=seq_len, step_s=tuple(step_s),
                  median_step_s=median, tokens_per_s=metrics.tokens_per_s(global_batch, seq_len, median),
                  samples_per_s=metrics.samples_per_s(global_batch, median), peak_memory_bytes=(1000, 1200),
                  memory_measure="tracker", losses=(10.0, 9.5, 9.0), attention_impl="eager",
                  wall_s=12.5, extra={"threads": 1, **(extra or {})}, warmup=2)
    return RunSummary(**{**fields, **kw})


def planned(cfg, capacity=None):
    lora = {} if cfg.lora is None else cfg.lora.planner_kwargs()
    w = Workload(get_arch(cfg.model, cfg.scale), world=2, micro_batch=cfg.micro_batch, seq_len=cfg.seq_len,
                 precision=cfg.precision, attention="eager", **lora)
    return estimate(w, cfg.strategy), (plan(w, capacity) if capacity else None)


def test_full_fine_tune_records_throughput_flops_memory_and_the_planner():
    s = summary()
    est, fit = planned(CFG, capacity=2**40)
    flops = training_flops_per_step(get_arch(CFG.model, CFG.scale), CFG.seq_len, s.global_batch)
    result = throughput_result(s, CFG, CPU, world=2, estimate=est, fit=fit, counted_flops=flops)
    assert sources(result) == {**THROUGHPUT, "mfu": "measured"}
    assert list(result.metrics)[:2] == ["tokens_per_s", "samples_per_s"]
    assert_recordable(result)
    m = result.metrics
    assert m["step_time_s"].value == 0.5 and m["launch_wall_s"].value == 12.5
    assert (m["loss_start"].value, m["loss_end"].value) == (10.0, 9.0)
    assert m["flops_per_step_modeled"].value == flops and m["flop_counter_ratio_modeled"].value == 1.0
    assert m["achieved_tflops"].value == pytest.approx(flops / 0.5 / 1e12)
    assert m["peak_tensor_bytes"].value == 1200 and m["peak_tensor_bytes_predicted"].value == est.total
    assert m["peak_tensor_bytes_over_predicted"].value == pytest.approx(1200 / est.total)
    # every timed step's tokens/s is a round (the warm-up steps' are not): generation claims are judged on them
    steps = (0.5, 0.4, 0.5, 0.6)
    assert m["tokens_per_s"].rounds == pytest.approx(tuple(4 * 128 / t for t in steps))
    # and the other figures read off the step time: the gate judges them on intervals
    assert m["samples_per_s"].rounds == pytest.approx(tuple(4 / t for t in steps))
    assert m["step_time_s"].rounds == steps
    assert m["achieved_tflops"].rounds == pytest.approx(tuple(flops / t / 1e12 for t in steps))
    assert m["mfu"].rounds == pytest.approx(tuple(m["mfu"].value * 0.5 / t for t in steps))
    timed = {"tokens_per_s", "samples_per_s", "step_time_s", "achieved_tflops", "mfu"}
    assert all(x.interval is None and x.rounds is None for name, x in m.items() if name not in timed)
    assert result.labels == {"attention": "eager", "memory_measure": "tracker", "method": "full",
                             "base_dtype": "float32"}
    assert result.attachments == {
        "planner": {**est.as_dict(), "tolerance": PLANNER_TOLERANCE["ddp"], "recommended": fit.recommended,
                    "reason": fit.reason},
        "per_rank_peak_bytes": [1000, 1200]}


def test_lora_adds_trainable_params_and_the_adapter_dtype_and_counts_what_lora_runs():
    s = summary(attention_impl=None, extra={"trainable_params": 4096, "adapter_dtype": "bfloat16",
                                            "base_dtype": "bfloat16", "flash_attention_route": "habana",
                                            "flash_attention_caveat": ""})
    est, _ = planned(LORA)
    result = throughput_result(s, LORA, CPU, world=2, estimate=est, fit=None, counted_flops=7)
    assert sources(result) == {"trainable_params": "measured", **THROUGHPUT, "mfu": "measured"}
    assert list(result.metrics)[0] == "trainable_params"  # recorded before the throughput, as it was
    assert_recordable(result)
    flops = training_flops_per_step(get_arch(LORA.model, LORA.scale), LORA.seq_len, s.global_batch, lora=LORA.lora)
    assert result.metrics["trainable_params"].value == 4096
    assert result.metrics["flops_per_step_modeled"].value == flops
    assert result.metrics["flop_counter_ratio_modeled"].value == 7 / flops
    # an empty caveat is not labeled; no attention implementation reads as ""
    assert result.labels == {"attention": "", "memory_measure": "tracker", "method": "lora",
                             "flash_attention_route": "habana", "base_dtype": "bfloat16",
                             "adapter_dtype": "bfloat16"}
    assert result.attachments["planner"]["recommended"] is None and result.attachments["planner"]["reason"] is None


def test_mfu_on_the_cpu_scales_the_measured_peak_per_thread_and_elsewhere_per_device():
    # CPU: 1 TFLOP/s measured with 4 threads; 2 ranks x 3 threads used
    assert training_mfu(0.3, CFG, CPU, world=2, threads_per_rank=3) == pytest.approx(0.3 / (0.25 * 6))
    # two CPU nodes of 2 ranks: achieved is the whole job's, so is the peak (it read 2x too high with ranks per node)
    assert training_mfu(0.6, CFG, CPU, world=4, threads_per_rank=3) == pytest.approx(0.6 / (0.25 * 12))
    # GPU: the spec's peak for the precision, times world devices
    assert training_mfu(5.0, CFG, GPU, world=4, threads_per_rank=1) == pytest.approx(5.0 / 40)
    amp = dataclasses.replace(CFG, precision="amp")
    assert training_mfu(5.0, amp, GPU, world=4, threads_per_rank=1) == pytest.approx(5.0 / 400)


def test_mfu_is_judged_in_the_precision_the_run_computes_in():
    """A LoRA base is bf16 on a GPU and Gaudi's trainer runs bf16 whatever the config says: their MFU is against the
    bf16 peak (a fp32-config LoRA run on a GPU read its MFU against the fp32 peak, 10x too high); on the CPU a
    LoRA base stays fp32."""
    from pytest_genai.train.lora import run_precision

    assert training_mfu(5.0, LORA, GPU, world=4, threads_per_rank=1) == pytest.approx(5.0 / 400)
    assert training_mfu(5.0, CFG, GPU, world=4, threads_per_rank=1) == pytest.approx(5.0 / 40)
    assert training_mfu(0.3, LORA, CPU, world=2, threads_per_rank=3) == pytest.approx(0.3 / (0.25 * 6))
    assert run_precision("fp32", False, "hpu") == run_precision("fp32", True, "cuda") == "amp"
    assert run_precision("fp32", True, "cpu") == run_precision("fp32", False, "cuda") == "fp32"


@pytest.mark.parametrize("device", [
    Device("cpu", 0, "cpu", "cpu-test", None),  # no spec
    Device("cpu", 0, "cpu", "cpu-test", dataclasses.replace(CPU_SPEC, threads=None)),  # probe threads unknown
    Device("cuda", 0, "gpu", "gpu-test", DeviceSpec("gpu-test", "cuda", "gpu", "datasheet", {"bf16": 1.0})),
], ids=["no-spec", "no-probe-threads", "no-fp32-peak"])
def test_no_mfu_when_the_peak_is_unknown(device):
    assert training_mfu(1.0, CFG, device, world=2, threads_per_rank=1) is None
    est, _ = planned(CFG)
    result = throughput_result(summary(), CFG, device, world=2, estimate=est, fit=None, counted_flops=1)
    assert sources(result) == THROUGHPUT
    assert_recordable(result)


SLOW, FAST = (9.0, 9.0, 1.0, 1.1, 1.0, 0.9), (9.0, 9.0, 0.5, 0.5, 0.6, 0.5)


def _jobs(steps, scales):
    return [summary(step_s=tuple(x * k for x in steps)) for k in scales]


@pytest.mark.parametrize(("build", "metric", "run_steps", "baseline_steps"), [
    (ddp_comparison_result, "throughput_ratio_ddp_over_sharded", SLOW, FAST),
    (flash_attention_result, "flash_attention_speedup", FAST, SLOW),
], ids=["ddp_over_sharded", "flash_attention"])
def test_a_comparison_is_the_ratio_of_mean_job_medians_over_interleaved_launches(build, metric, run_steps,
                                                                                  baseline_steps):
    """DDP over a sharded run, fused over unfused attention: the fast side's mean job median over the slow side's,
    each side launched several times; > 1 when the DDP / fused side is faster; every job's tokens/s attached."""
    runs, bases = _jobs(run_steps, (1.0, 1.02, 0.98, 1.01, 0.99)), _jobs(baseline_steps, (1.0, 0.97, 1.03, 1.0, 1.01))
    order = ("run", "base", "base", "run") * 2 + ("run", "base")
    result = build(runs, bases, order=order)
    assert sources(result) == {metric: "measured"}
    assert_recordable(result)
    m = result.metrics[metric]
    slow, fast = (runs, bases) if build is ddp_comparison_result else (bases, runs)
    expected = statistics.fmean(r.median_step_s for r in slow) / statistics.fmean(r.median_step_s for r in fast)
    assert m.value == pytest.approx(expected) and m.value > 1
    assert m.interval.lo <= m.value <= m.interval.hi and m.interval.n == 5 and m.interval.level >= 0.9
    assert "two-stage" in m.interval.method
    assert result.labels == {"launches": "5 and 5 (baseline), interleaved"}
    assert result.attachments == {"launches": {"order": list(order),
                                               "run_tokens_per_s": [r.tokens_per_s for r in runs],
                                               "baseline_tokens_per_s": [r.tokens_per_s for r in bases]}}


def test_the_spread_between_launches_widens_the_comparison_interval():
    """The interval is over launches: baseline jobs whose medians spread +-10% between launches give a far wider
    interval than steady ones, though each job's own steps are as steady (an interval over one launch's steps
    cannot see that spread)."""
    steady = (9.0, 9.0) + (1.0, 1.02, 0.98, 1.01, 0.99, 1.0) * 2
    sharded = _jobs(tuple(2 * x for x in steady), (1.0,) * 5)
    same = ddp_comparison_result(sharded, _jobs(steady, (1.0,) * 5))
    spread = ddp_comparison_result(sharded, _jobs(steady, (1.0, 0.9, 1.1, 0.95, 1.05)))
    a, b = (r.metrics["throughput_ratio_ddp_over_sharded"].interval for r in (same, spread))
    assert b.hi - b.lo > 3 * (a.hi - a.lo)
    assert b.lo < 2.0 < b.hi


def test_two_launches_a_side_cannot_reach_a_verdicts_level():
    """Tiny scale's 2 launches a side: the interval's level is capped at 50%, so the claim reads inconclusive."""
    result = ddp_comparison_result(_jobs(SLOW, (1.0, 1.01)), _jobs(FAST, (1.0, 0.99)))
    assert result.metrics["throughput_ratio_ddp_over_sharded"].interval.level == 0.5


def test_no_comparison_is_a_label():
    ddp = ddp_comparison_result(summary(), None)
    unfit = flash_attention_result([summary()], None, unfit_reason="needs 3 GiB")
    for result in (ddp, unfit):
        assert (result.metrics, result.attachments) == ({}, {})
    assert ddp.labels == {"ddp_comparison": NO_DDP_COMPARISON}
    assert unfit.labels == {"attention_comparison": "none: unfused attention does not fit (needs 3 GiB)"}


def test_launcher_vs_bare_result():
    suite = [summary(step_s=(9.0, 9.0, 0.10, 0.11, 0.12, 0.10), extra={"threads": 2}),
             summary(step_s=(9.0, 9.0, 0.12, 0.12, 0.13, 0.12), extra={"threads": 2})]
    before = BareRun((5.0, 5.0, 0.10, 0.10, 0.10, 0.10), (7.0, 6.9), 10.0, 1)
    middle = BareRun((5.0, 5.0, 0.11, 0.11, 0.11, 0.11), (7.0, 6.9), 10.5, 1)
    after = BareRun((5.0, 5.0, 0.12, 0.12, 0.12, 0.12), (7.0, 6.9), 11.0, 1)
    result = launcher_vs_bare_result(suite, [before, middle, after], warmup=2)
    assert sources(result) == {"throughput_ratio_launcher_vs_bare": "measured", "step_time_s": "measured",
                               "bare_step_time_s": "measured", "launch_wall_s": "measured",
                               "bare_launch_wall_s": "measured"}
    assert_recordable(result)
    comparison = launcher_vs_bare([s.step_s for s in suite], [before.step_s, middle.step_s, after.step_s], 2)
    m = result.metrics
    assert m["throughput_ratio_launcher_vs_bare"].value == comparison.ratio == pytest.approx(0.11 / 0.1125)
    assert m["throughput_ratio_launcher_vs_bare"].interval == comparison.interval
    assert m["step_time_s"].value == pytest.approx((0.105 + 0.12) / 2)
    assert m["bare_step_time_s"].value == pytest.approx(0.11)
    assert (m["launch_wall_s"].value, m["bare_launch_wall_s"].value) == (12.5, 10.5)
    jobs = result.attachments["jobs"]
    assert jobs["bare_step_s"] == pytest.approx([0.10, 0.11, 0.12]) and jobs["suite_step_s"] == pytest.approx([0.105, 0.12])
    assert jobs["bare_launch_wall_s"] == [10.0, 10.5, 11.0] and jobs["suite_launch_wall_s"] == [12.5, 12.5]
    assert result.labels == {"threads_per_rank": "suite 2, bare 1"}


def test_wikitext_result_records_the_held_out_loss_drop():
    s = summary(extra={"eval_loss_start": 4.0, "eval_loss_end": 3.0})
    result = wikitext_result(s)
    assert sources(result) == WIKITEXT
    assert_recordable(result)
    m = result.metrics
    assert (m["eval_loss_start"].value, m["eval_loss_end"].value, m["eval_loss_drop"].value) == (4.0, 3.0, 0.25)
    assert m["tokens_per_s"].value == s.tokens_per_s and m["launch_wall_s"].value == 12.5
    assert (result.labels, result.attachments) == ({}, {})


def test_a_cuda_runs_measured_fixed_overhead_is_added_to_the_prediction_its_peak_is_judged_on():
    """cuBLAS's 32 MiB workspace sits in the allocator's peak: a tiny row of 14-27 MiB predicted failed its ±15%."""
    est, _ = planned(CFG)
    workspace = 32 * 2**20
    s = summary(peak_memory_bytes=(est.total + workspace,) * 2, extra={"fixed_overhead_bytes": workspace,
                                                                        "hpu_mode": "lazy"})
    flops = training_flops_per_step(get_arch(CFG.model, CFG.scale), CFG.seq_len, s.global_batch)
    m = throughput_result(s, CFG, GPU, world=2, estimate=est, fit=None, counted_flops=flops)
    assert_recordable(m)
    assert m.metrics["device_fixed_overhead_bytes"].value == workspace
    assert m.metrics["device_fixed_overhead_bytes"].source == "measured"
    assert m.metrics["peak_tensor_bytes_over_predicted"].value == pytest.approx(1.0)
    assert m.metrics["peak_tensor_bytes_predicted"].value == est.total  # the planner's own figure, modeled
    assert m.labels["hpu_mode"] == "lazy"


def test_fixed_overhead_is_what_stays_allocated_after_the_warm_up_work():
    from pytest_genai.runtime.memtrack import fixed_overhead_bytes

    held = [1000]
    assert fixed_overhead_bytes(lambda: held[0], lambda: held.__setitem__(0, 1000 + 32 * 2**20)) == 32 * 2**20
    assert fixed_overhead_bytes(lambda: 5, lambda: None) == 0
