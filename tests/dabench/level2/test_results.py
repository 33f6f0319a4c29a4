"""What the Level 2 benchmarks record (pytest_genai.dabench.level2.results): every metric name and its source pinned
per benchmark kind, the rounds timing claims are judged on, labels and attachments; every metric is registered and
its source is one the recorder accepts."""
import dataclasses

import pytest

from pytest_genai.dabench.balance import load_imbalance
from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2.artifacts import mixed_precision_speedup, tp_scaling_ratio
from pytest_genai.dabench.level2.config import BatchSweepConfig, ParallelConfig, PrecisionConfig
from pytest_genai.dabench.level2.deploy import BatchSweepResult, PrecisionResult
from pytest_genai.dabench.level2.results import (batch_sweep_result, parallel_result, precision_result,
                                                 vendor_precision_result, vendor_tp_result)
from pytest_genai.dabench.level2.run import summarize
from pytest_genai.dabench.readers.runlog import VendorRunLog
from pytest_genai.results.measurement import Measurement
from pytest_genai.plugin.recorder import result_problems

W = DecoderConfig(layers=4, hidden=64, heads=2, seq_len=16, batch=8, mode="train")

SCALING = {"world_size": "config", "samples_per_s": "measured", "baseline_samples_per_s": "measured",
           "step_time_s": "measured", "baseline_step_time_s": "measured", "scaling_throughput_ratio": "measured",
           "scaling_efficiency": "measured", "comm_time_share": "measured"}
PIPELINE = {**SCALING, "max_stage_compute_s": "measured", "naive_max_stage_compute_s": "measured",
            "partition_max_stage_ratio": "measured", "max_stage_compute_in_pipeline_s": "measured",
            "naive_max_stage_compute_in_pipeline_s": "measured", "partition_max_stage_ratio_in_pipeline": "measured",
            "partition_throughput_ratio": "measured", "load_imbalance": "measured", "naive_load_imbalance": "measured",
            "partition_max_stage_ratio_modeled": "modeled", "pipeline_step_time_s_modeled": "modeled",
            "pipeline_bubble_fraction_modeled": "modeled"}


def sources(result):
    return {name: m.source for name, m in result.metrics.items()}


def assert_recordable(result):
    """Each metric is a Measurement with an explicit source the recorder accepts, and registered (so its unit is)."""
    assert not result_problems(result)


def dp_summary():
    cfg = ParallelConfig("dp", W, warmup=1, repeats=3)
    r0 = {"baseline_step_s": [9.0, 1.0, 1.0, 1.0], "step_s": [9.0, 1.2, 1.25, 1.2],
          "nosync_step_s": [9.0, 1.0, 1.0, 1.0], "load_before": {"load1": 0.5}}
    r1 = {"baseline_step_s": [0.0] * 4, "step_s": [9.0, 1.25, 1.2, 1.25], "nosync_step_s": [9.0, 1.0, 1.1, 1.0]}
    return summarize([r0, r1], cfg), cfg


def test_dp_result_records_every_scaling_metric_with_rounds():
    s, cfg = dp_summary()
    result = parallel_result(s, cfg)
    assert sources(result) == SCALING
    assert_recordable(result)
    m = result.metrics
    assert m["world_size"].value == 2 and m["scaling_throughput_ratio"].value == pytest.approx(1.6)
    assert m["scaling_throughput_ratio"].rounds == pytest.approx((1.6, 1.6, 1.6))
    assert m["scaling_efficiency"].rounds == pytest.approx((0.8, 0.8, 0.8))
    assert m["comm_time_share"].rounds == pytest.approx(tuple(s.comm_share_rounds))
    # each side's rounds after the warm-up (the slowest rank's step), so the gate judges them on intervals
    assert m["step_time_s"].rounds == (1.25, 1.25, 1.25) and m["baseline_step_time_s"].rounds == (1.0, 1.0, 1.0)
    assert m["samples_per_s"].rounds == pytest.approx(tuple(s.samples_per_step / 1.25 for _ in range(3)))
    assert m["baseline_samples_per_s"].rounds == pytest.approx((s.baseline_samples,) * 3)
    assert result.labels == {"strategy": "dp", "comm_time_share_method": s.comm_method,
                             "scaling_baseline": "1 rank, same workload; dp: one rank's batch (weak scaling), "
                                                 "tp/pp: whole batch"}
    assert result.attachments == {"load_context": {"before_load1": 0.5}}


def test_pp_result_adds_both_partitions_and_the_pipeline_model():
    cfg = ParallelConfig("pp", W, head_vocab=128, warmup=1, repeats=2, micro_batches=2)
    def rank(baseline, opt_step, opt_compute, naive_step, naive_compute):
        return {"baseline_step_s": baseline, "layer_loads_s": [1.0, 1.0, 1.0, 1.0, 4.0],
                "runs": {"optimal": {"bounds": [0, 4, 5], "step_s": opt_step, "compute_s": opt_compute,
                                     "comm_s": [0.5] * 3},
                         "naive": {"bounds": [0, 3, 5], "step_s": naive_step, "compute_s": naive_compute,
                                   "comm_s": [0.5] * 3}}}

    # the first round is the warm-up; per round the slowest rank's step, each stage's (rank's) compute
    r0 = {**rank([4.0] * 3, [9.0, 2.0, 2.2], [9.0, 8.0, 7.0], [9.0, 2.5, 3.3], [9.0, 10.0, 9.0]),
          "alone_stage_s": {"optimal": [[9.0, 9.0], [4.0, 3.0], [4.4, 4.0]],
                            "naive": [[1.0, 1.0], [3.0, 5.0], [3.0, 5.5]]}}
    r1 = rank([0.0] * 3, [9.0, 1.9, 2.0], [9.0, 6.0, 7.5], [9.0, 2.4, 3.0], [9.0, 4.0, 5.0])
    s = summarize([r0, r1], cfg)
    result = parallel_result(s, cfg)
    assert sources(result) == PIPELINE
    assert_recordable(result)
    m = result.metrics
    assert m["partition_max_stage_ratio"].rounds == pytest.approx((0.8, 0.8))
    assert m["max_stage_compute_s"].value == pytest.approx(4.2) and m["naive_max_stage_compute_s"].value == 5.25
    # the bottleneck stages timed alone carry their rounds: the gate judges them on intervals
    optimal, naive = s.partitions["optimal"], s.partitions["naive"]
    assert m["max_stage_compute_s"].rounds == tuple(optimal.max_stage_alone_rounds)
    assert m["naive_max_stage_compute_s"].rounds == tuple(naive.max_stage_alone_rounds)
    assert m["partition_max_stage_ratio_modeled"].value == pytest.approx(4.0 / 5.0)
    assert m["pipeline_bubble_fraction_modeled"].value == pytest.approx(1 / 3)  # (stages - 1) / (mb + stages - 1)
    # in the pipeline both partitions run in every round: each round's value is judged, the figures stay the medians'
    assert m["partition_throughput_ratio"].value == pytest.approx(2.9 / 2.1)  # naive's median step over optimal's
    assert m["partition_throughput_ratio"].rounds == pytest.approx((2.5 / 2.0, 3.3 / 2.2))
    assert m["max_stage_compute_in_pipeline_s"].rounds == (8.0, 7.5)
    assert m["naive_max_stage_compute_in_pipeline_s"].rounds == (10.0, 9.0)
    assert m["partition_max_stage_ratio_in_pipeline"].rounds == pytest.approx((0.8, 7.5 / 9.0))
    assert m["comm_time_share"].rounds == pytest.approx(((0.25 + 0.5 / 1.9) / 2, (0.5 / 2.2 + 0.25) / 2))
    # the stage load imbalance, a statistic of per-stage medians: an interval from redrawing each stage's rounds
    li = m["naive_load_imbalance"]
    assert li.value == pytest.approx(load_imbalance([9.5, 4.5])) and li.rounds is None
    # naive's stages ran 10, 9 and 4, 5: redrawn medians give LIs from 7/10 (10 and 4) to 7/9 (9 and 5)
    assert 0.7 - 1e-9 <= li.interval.lo < li.value < li.interval.hi <= 7 / 9 + 1e-9
    assert m["load_imbalance"].interval.hi <= 1.0
    assert {"partition_optimal", "partition_naive", "load_imbalance_subtasks", "max_stage_compute_method"} <= set(
        result.labels)
    assert result.attachments["layer_loads_s"] == [1.0, 1.0, 1.0, 1.0, 4.0]


@pytest.mark.parametrize(("step_s", "plateau"), [((1.0, 1.0, 2.0, 4.0), 2), ((1.0, 1.0, 1.0, 1.0), None)])
def test_batch_sweep_result(step_s, plateau):
    cfg = BatchSweepConfig(W, batches=(1, 2, 4, 8), min_gain=0.1)
    rounds = tuple((s, s) for s in step_s)
    result = batch_sweep_result(BatchSweepResult((1, 2, 4, 8), step_s, 0.1, rounds), cfg)
    expected = {"samples_per_s": "measured", "best_batch": "measured", "batch_throughput_gain": "measured"}
    if plateau is not None:
        expected["plateau_batch"] = "measured"
    assert sources(result) == expected
    assert_recordable(result)
    assert result.metrics["best_batch"].value == (2 if plateau else 8)
    assert result.metrics["batch_throughput_gain"].rounds == pytest.approx((2.0, 2.0) if plateau else (8.0, 8.0))
    best = 1 if plateau else 3
    assert result.metrics["samples_per_s"].rounds == pytest.approx(((1, 2, 4, 8)[best] / step_s[best],) * 2)
    assert result.labels["plateau"] == ("gains below 10% after batch 2" if plateau
                                        else "still gaining more than 10% at the largest batch 8")
    assert [p["batch"] for p in result.attachments["batch_curve"]] == [1, 2, 4, 8]


@pytest.mark.parametrize(("precision", "speedup"), [("amp_bf16", "mixed_precision_speedup"),
                                                    ("bf16", "low_precision_speedup")])
def test_precision_result_names_the_speedup_by_kind(precision, speedup):
    cfg = PrecisionConfig(W, precision)
    run = PrecisionResult(precision, fp32_step_s=2.0, step_s=1.0, output_rel_error=0.01, speedup_rounds=(2.0, 1.9))
    result = precision_result(run, cfg)
    assert sources(result) == {"samples_per_s": "measured", "fp32_samples_per_s": "measured", "step_time_s": "measured",
                               "precision_output_rel_error": "measured", speedup: "measured"}
    assert_recordable(result)
    assert result.metrics["samples_per_s"].value == 8.0 and result.metrics["fp32_samples_per_s"].value == 4.0
    assert result.metrics[speedup].value == 2.0 and result.metrics[speedup].rounds == (2.0, 1.9)
    assert result.labels == {}
    assert precision_result(run, cfg, fp32_matmul_precision="highest").labels == {"fp32_matmul_precision": "highest"}
    assert result.metrics["samples_per_s"].rounds is None  # the run kept no step rounds
    timed = dataclasses.replace(run, fp32_step_rounds=(2.0, 2.5), step_rounds=(1.0, 1.25))
    m = precision_result(timed, cfg).metrics
    assert m["samples_per_s"].rounds == (8.0, 6.4) and m["fp32_samples_per_s"].rounds == (4.0, 3.2)
    assert m["step_time_s"].rounds == (1.0, 1.25)


def _runs(kind, *specs):
    return [VendorRunLog(kind, name, precision, chips, 24, rate, "log: samples/s") for name, precision, chips, rate in specs]


def test_vendor_results():
    runs = _runs("rdu", ("a-tp2", "fp32", 2, 1000.0), ("a-tp4", "fp32", 4, 600.0), ("b-tp2", "fp32", 2, 1001.0),
                 ("b-tp4", "fp32", 4, 602.0))
    tp = vendor_tp_result(tp_scaling_ratio(runs))
    assert sources(tp) == {"scaling_throughput_ratio": "measured", "samples_per_s": "measured",
                           "baseline_samples_per_s": "measured", "world_size": "config"}
    assert_recordable(tp)
    assert tp.metrics["world_size"].value == 4 and len(tp.metrics["scaling_throughput_ratio"].rounds) == 2
    assert tp.labels == {"runs": "a-tp4, b-tp4", "baseline_runs": "a-tp2, b-tp2", "throughput_source": "log: samples/s"}
    assert [r["name"] for r in tp.attachments["vendor_runs"]] == ["a-tp4", "b-tp4", "a-tp2", "b-tp2"]

    one = _runs("ipu", ("m", "mixed", 4, 120.0), ("f", "fp32", 4, 100.0))
    mp = vendor_precision_result(mixed_precision_speedup(one, "ipu"), "ipu")
    assert sources(mp) == {"mixed_precision_speedup": "measured", "samples_per_s": "measured",
                           "baseline_samples_per_s": "measured"}
    assert_recordable(mp)
    assert mp.metrics["mixed_precision_speedup"].value == pytest.approx(1.2)
    assert mp.metrics["mixed_precision_speedup"].rounds is None  # one run per setting: no rounds
    assert mp.labels["mixed_precision_baseline"].startswith("fp32 training")
