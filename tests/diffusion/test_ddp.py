import pytest

from pytest_genai.diffusion import DiffusionConfig
from pytest_genai.diffusion.ddp import run_ddp, summarize


def _result(world=2, batch=8, steps=((0.10, 0.12, 0.11), (0.11, 0.10, 0.13)), base=(0.05, 0.06, 0.05)):
    return {
        "schema": "pytest-genai-diffusion-ddp/1", "device_kind": "cpu", "world_size": world, "config": {},
        "baseline": {"step_times_s": list(base), "losses": [1.0], "images_per_step": batch, "flops_per_step": 1e9},
        # listed out of order: summarize sorts by rank
        "ranks": [{"rank": r, "step_times_s": list(steps[r]), "losses": [1.0 - 0.1 * r, 0.5],
                   "images_per_step": batch, "flops_per_step": 1e9} for r in reversed(range(world))],
    }


def test_summarize_weak_scaling_arithmetic():
    s = summarize(_result())
    # slowest rank per step: 0.11, 0.12, 0.13 -> median 0.12; baseline median 0.05
    assert s.step_s == pytest.approx(0.12)
    assert s.images_per_step == 16 and s.baseline_images_per_step == 8
    assert s.images_per_s == pytest.approx(16 / 0.12)
    assert s.baseline_images_per_s == pytest.approx(8 / 0.05)
    assert s.scaling_throughput_ratio == pytest.approx((16 / 0.12) / (8 / 0.05))
    assert s.scaling_efficiency == pytest.approx(s.scaling_throughput_ratio / 2)
    assert s.losses == (1.0, 0.5)  # rank 0's
    # per interleaved round: the slowest rank's DDP step against the same round's one-rank step
    assert s.scaling_ratio_rounds == pytest.approx([16 / 0.11 / (8 / 0.05), 16 / 0.12 / (8 / 0.06), 16 / 0.13 / (8 / 0.05)])


def test_perfect_scaling_has_efficiency_one():
    same = ((0.1, 0.1), (0.1, 0.1))
    s = summarize(_result(steps=same, base=(0.1, 0.1)))
    assert s.scaling_throughput_ratio == pytest.approx(2.0)
    assert s.scaling_efficiency == pytest.approx(1.0)


def test_ranks_with_different_step_counts_are_refused():
    bad = _result(steps=((0.1, 0.1), (0.1,)))
    with pytest.raises(ValueError, match="same non-zero number of steps"):
        summarize(bad)


def test_summarize_rejects_foreign_or_incomplete_results():
    with pytest.raises(ValueError, match="not a diffusion DDP result"):
        summarize({"world_size": 2})
    bad = _result()
    bad["world_size"] = 3
    with pytest.raises(ValueError, match="2 ranks' reports for world_size=3"):
        summarize(bad)


def test_run_ddp_needs_two_ranks(tmp_path):
    with pytest.raises(ValueError, match="at least 2 ranks"):
        run_ddp(DiffusionConfig(), 1, tmp_path)
