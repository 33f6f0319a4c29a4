"""Summaries of per-rank results (pure): slowest rank per step, medians after warm-up, ratios, shares."""
import pytest

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2.config import ParallelConfig
from pytest_genai.runtime.timing import slowest_rank_steps
from pytest_genai.dabench.level2.run import in_call_share, partition_ratio_rounds, summarize

W = DecoderConfig(layers=4, hidden=64, heads=2, seq_len=16, batch=8, mode="train")


def test_dp_weak_scaling_numbers():
    cfg = ParallelConfig("dp", W, warmup=1, repeats=3)
    r0 = {"baseline_step_s": [9.0, 1.0, 1.0, 1.0], "step_s": [9.0, 1.2, 1.25, 1.2], "nosync_step_s": [9.0, 1.0, 1.0, 1.0]}
    r1 = {"baseline_step_s": [0.0] * 4, "step_s": [9.0, 1.25, 1.2, 1.25], "nosync_step_s": [9.0, 1.0, 1.1, 1.0]}
    s = summarize([r0, r1], cfg)
    assert s.step_s == 1.25  # slowest rank per step: 1.25, 1.25, 1.25
    assert s.baseline_samples_per_s == 8.0 and s.samples_per_s == 16 / 1.25
    assert s.scaling_throughput_ratio == pytest.approx(1.6)
    assert s.scaling_efficiency == pytest.approx(0.8)
    assert s.comm_time_share == pytest.approx((1.25 - 1.0) / 1.25)  # exposed: sync - no_sync


def test_tp_strong_scaling_and_in_call_share():
    cfg = ParallelConfig("tp", W, warmup=0, repeats=2)
    r0 = {"baseline_step_s": [2.0, 2.0], "step_s": [1.0, 1.0], "comm_s": [0.5, 0.3]}
    r1 = {"baseline_step_s": [0.0, 0.0], "step_s": [1.0, 1.0], "comm_s": [0.1, 0.3]}
    s = summarize([r0, r1], cfg)
    assert s.scaling_throughput_ratio == 2.0  # same batch, half the time
    assert s.comm_time_share == pytest.approx(0.3)  # per step: mean(0.5, 0.1), mean(0.3, 0.3)


def test_pp_partitions_summary():
    cfg = ParallelConfig("pp", W, head_vocab=128, warmup=0, repeats=1, micro_batches=2)
    loads = [1.0, 1.0, 1.0, 1.0, 4.0]

    def rank(compute_opt, compute_naive):
        return {"baseline_step_s": [4.0], "layer_loads_s": loads,
                "runs": {"optimal": {"bounds": [0, 4, 5], "step_s": [2.0], "compute_s": [compute_opt], "comm_s": [0.5]},
                         "naive": {"bounds": [0, 3, 5], "step_s": [2.5], "compute_s": [compute_naive], "comm_s": [0.5]}}}

    s = summarize([rank(8.0, 6.0), rank(8.0, 10.0)], cfg)
    opt, naive = s.partitions["optimal"], s.partitions["naive"]
    assert s.step_s == opt.step_s == 2.0 and s.scaling_throughput_ratio == 2.0
    assert opt.max_stage_compute_s / naive.max_stage_compute_s == 0.8
    assert opt.stage_load_imbalance == 1.0 and naive.stage_load_imbalance == pytest.approx(0.8)
    assert opt.partition.max_stage_load == 4.0 and naive.partition.max_stage_load == 5.0


def test_pp_ratio_is_judged_per_round_on_stages_timed_alone():
    cfg = ParallelConfig("pp", W, head_vocab=128, warmup=1, repeats=2, micro_batches=2)
    base = {"baseline_step_s": [4.0] * 3, "layer_loads_s": [1.0, 1.0, 1.0, 1.0, 4.0],
            "runs": {n: {"bounds": b, "step_s": [2.0] * 3, "compute_s": [8.0] * 3, "comm_s": [0.5] * 3}
                     for n, b in (("optimal", [0, 4, 5]), ("naive", [0, 3, 5]))}}
    # per round, per stage: the warm-up round is dropped; the bottleneck stage of each split is compared per round
    r0 = {**base, "alone_stage_s": {"optimal": [[9.0, 9.0], [4.0, 3.0], [4.4, 4.0]],
                                    "naive": [[1.0, 1.0], [3.0, 5.0], [3.0, 5.5]]}}
    s = summarize([r0, {**base, "baseline_step_s": [0.0] * 3}], cfg)
    opt, naive = s.partitions["optimal"], s.partitions["naive"]
    assert opt.max_stage_alone_rounds == [4.0, 4.4] and naive.max_stage_alone_rounds == [5.0, 5.5]
    assert partition_ratio_rounds(opt, naive) == pytest.approx([0.8, 0.8])
    with pytest.raises(ValueError, match="stage-alone rounds missing"):
        partition_ratio_rounds(summarize([base, base], cfg).partitions["optimal"], naive)


def test_rank_count_and_step_count_must_match():
    cfg = ParallelConfig("tp", W, warmup=0, repeats=1)
    with pytest.raises(ValueError, match="1 rank results for world_size=2"):
        summarize([{}], cfg)
    with pytest.raises(ValueError, match="same non-zero number of steps"):
        slowest_rank_steps([[1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="no timed steps"):
        in_call_share([[1.0]], [[0.1]], warmup=1)
