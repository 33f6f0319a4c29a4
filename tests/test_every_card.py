"""Every config of every experiment with a memory model, at every scale, on every accelerator in specs.toml and at
world sizes 1 to 64: its modeled peak fits 90% of the card (and the host, for the fine-tuning builds), or the
benchmark's own decision function fits it or skips it saying why; none of them raises. Pure modeled functions only
(no torch, no model builds): it runs in the default CI set."""
import importlib.util
from pathlib import Path

import pytest

from pytest_genai.dabench.capacity import MEMORY_HEADROOM, fit_problem, predicted_peak_bytes
from pytest_genai.devices.specs import load_specs

ROOT = Path(__file__).resolve().parents[1]
SCALES = ("tiny", "small", "full")
CARDS = sorted(g for g, s in load_specs().items() if s.kind in ("cuda", "hpu") and s.mem_capacity_gb)
WORLDS = range(1, 65)
GiB = 2**30


def _capacity(generation):
    return int(load_specs()[generation].mem_capacity_gb * 1e9)


def _benchmark_module(name):
    spec = importlib.util.spec_from_file_location(f"_every_card_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_new_cards_are_covered():
    assert {"h100-nvl", "h200-nvl", "gh200", "h100-sxm", "h200", "gaudi2", "gaudi3"} <= set(CARDS)


@pytest.mark.parametrize("generation", CARDS)
def test_level1_every_config_fits_or_skips_saying_why(generation):
    from pytest_genai.dabench.config import capacity_config, default_sweep

    kind, capacity = load_specs()[generation].kind, _capacity(generation)
    for scale in SCALES:
        for cfg in default_sweep(kind, scale):
            why = fit_problem(cfg, capacity)
            peak = predicted_peak_bytes(cfg, foreach_optimizer=True).total
            if why is None:
                assert peak <= MEMORY_HEADROOM * capacity, (generation, cfg.id)
            else:
                assert cfg.id in why and "GiB" in why
    # the capacity search starts from one layer: that one must fit every card
    assert fit_problem(capacity_config(kind), capacity) is None


@pytest.mark.parametrize("generation", CARDS)
def test_level2_every_config_fits_or_skips_saying_why(generation):
    from pytest_genai.dabench.level2 import config as l2

    kind, capacity = load_specs()[generation].kind, _capacity(generation)
    limit = MEMORY_HEADROOM * capacity
    for scale in SCALES:
        sweep = l2.batch_sweep_config(kind, scale)
        try:
            kept, why = l2.fitting_batches(sweep, capacity)
        except ValueError as exc:
            assert "needs two batches that fit" in str(exc)
        else:
            assert all(predicted_peak_bytes(sweep.at(b), foreach_optimizer=True).total <= limit for b in kept.batches)
            assert (why is None) == (kept.batches == sweep.batches)
        for precision in l2.precisions(kind):
            cfg = l2.PrecisionConfig(l2.precision_workload(kind, scale), precision)
            why = l2.precision_fits(cfg, capacity)
            assert why is None or "GiB modeled" in why
        if kind != "cuda":  # the scaling runs are torch.distributed on cpu and cuda
            continue
        for strategy in l2.STRATEGIES:
            for world in WORLDS:
                cfg, why = l2.scaling_run(strategy, kind, scale, world)
                if cfg is None:
                    assert why
                    continue
                # each rank holds at most the whole stack (dp: all of it; tp and pp: a part)
                assert predicted_peak_bytes(cfg.workload, foreach_optimizer=True).total <= limit, cfg.id


@pytest.fixture(scope="module")
def finetune():
    return _benchmark_module("test_finetune")


@pytest.mark.parametrize("scale", SCALES)
def test_finetune_every_config_world_and_card_fits_or_skips_saying_why(finetune, scale):
    """The benchmark's own planner call, at world sizes 1-64, on every card: a config it launches fits 90% of the
    card; one it skips has the planner's reason. And the ranks' host builds: fit 90% of the node's RAM or a reason."""
    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.config import benchmark_matrix, init_mode
    from pytest_genai.train.planner import host_bytes_per_rank, host_fit_problem

    for cfg in benchmark_matrix(scale, ("full", "lora")):
        for generation in CARDS:
            kind, capacity = load_specs()[generation].kind, _capacity(generation)
            for world in WORLDS if generation in ("h100-sxm", "gaudi3") else (1, 2, 3, 8, 16, 64):
                estimate, fit = finetune._planner(cfg, world, capacity, kind)
                if fit.fits(cfg.strategy):
                    assert estimate.total <= MEMORY_HEADROOM * capacity
                else:
                    assert fit.reason, (cfg.id, generation, world)
            arch = get_arch(cfg.model, cfg.scale)
            for ranks_per_node, host in ((8, 2 * 2**40), (8, 512 * GiB), (1, 64 * GiB)):
                why = host_fit_problem(arch, init_mode(cfg, kind), ranks_per_node, host)
                need = ranks_per_node * host_bytes_per_rank(arch, init_mode(cfg, kind))
                assert (why is None) == (need <= 0.9 * host), (cfg.id, ranks_per_node, host)
