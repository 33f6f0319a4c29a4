"""What a pipeline rank holds: one set of layers and one optimizer, shared by the baseline, its own stages and the
stand-alone stages (no process group needed: the rank's work is built, then run, on the CPU)."""
import torch

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2.partition import naive_partition, optimal_partition
from pytest_genai.dabench.level2.pipeline import build_layers, output_width
from pytest_genai.dabench.level2.strategies import RankContext, _pp_rank_work
from pytest_genai.dabench.model import make_input

CFG = DecoderConfig(layers=3, hidden=32, heads=2, seq_len=8, batch=4, mode="train")
VOCAB = 48


def _work(rank):
    torch.set_num_threads(1)
    layers = build_layers(CFG, VOCAB, "cpu")
    micro = list(make_input(CFG, "cpu").chunk(2))
    width = output_width(CFG, VOCAB, len(layers) - 1, len(layers))
    grads = [torch.full((m.shape[0], CFG.seq_len, width), 1e-3) for m in micro]
    loads = [1.0, 1.0, 1.0, 3.0]
    partitions = {"optimal": optimal_partition(loads, 2), "naive": naive_partition(loads, 2)}
    ctx = RankContext(rank=rank, world=2, kind="cpu", device=torch.device("cpu"))
    return layers, partitions, _pp_rank_work(layers, partitions, micro, grads, ctx)


def test_rank0_runs_baseline_stages_and_alone_stages_on_one_set_of_layers_and_one_optimizer():
    layers, partitions, (one_rank, stages, alone) = _work(0)
    weights = {id(p) for layer in layers for p in layer.parameters()}
    for name, (stage, opt) in stages.items():
        assert [id(m) for m in stage] == [id(layers[i]) for i in partitions[name].stage_layers[0]]
    (opt,) = {id(opt): opt for _, opt in stages.values()}.values()  # one optimizer for every stage of the rank
    assert {id(p) for group in opt.param_groups for p in group["params"]} == weights
    before = [p.detach().clone() for layer in layers for p in layer.parameters()]
    one_rank()
    for runs in alone.values():
        assert all(run() > 0 for run in runs)
    # every run stepped the shared weights and left no gradient behind; the optimizer state is one per weight
    assert all(not torch.equal(a, p) for a, p in zip(before, (p for layer in layers for p in layer.parameters())))
    assert all(p.grad is None for layer in layers for p in layer.parameters())
    assert {id(p) for p in opt.state} == weights


def test_a_later_rank_steps_only_the_layers_of_its_own_stages():
    layers, partitions, (one_rank, stages, alone) = _work(1)
    assert one_rank is None and alone == {}
    own = {i for part in partitions.values() for i in part.stage_layers[1]}
    (_, opt), *_ = stages.values()
    assert {id(p) for group in opt.param_groups for p in group["params"]} == {
        id(p) for i in own for p in layers[i].parameters()}
