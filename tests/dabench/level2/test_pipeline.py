"""The GPipe schedule on threads (ThreadGroup) equals one rank's sequential step, for any stage split (float64)."""
import copy

import pytest
import torch
from torch import nn

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.model import make_input
from pytest_genai.dabench.level2.partition import Partition
from pytest_genai.dabench.level2.pipeline import (build_layers, layer_loads, output_width, run_sequential_step,
                                                 run_stage_step)
from threadgroup import ThreadGroup

torch.set_num_threads(1)
CFG = DecoderConfig(layers=3, hidden=32, heads=2, seq_len=8, batch=4, mode="train")
VOCAB = 48


def setup(micro_batches):
    layers = [layer.double() for layer in build_layers(CFG, VOCAB, "cpu")]
    x = make_input(CFG, "cpu").double()
    micro = list(x.chunk(micro_batches))
    width = output_width(CFG, VOCAB, len(layers) - 1, len(layers))
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(m.shape[0], CFG.seq_len, width, generator=gen, dtype=torch.float64) for m in micro]
    return layers, micro, grads


@pytest.mark.parametrize("bounds", [(0, 2, 4), (0, 3, 4), (0, 1, 2, 4), (0, 1, 2, 3, 4)])
def test_pipeline_equals_sequential(bounds):
    m = 2
    layers, micro, grads = setup(m)
    ref = nn.Sequential(*copy.deepcopy(layers))
    ref_out = [ref(x).detach() for x in micro]
    run_sequential_step(ref, micro, grads, None)
    part = Partition((1.0,) * len(layers), bounds)
    stages = [nn.Sequential(*(copy.deepcopy(layers[i]) for i in rng)) for rng in part.stage_layers]
    n = part.stages

    def rank(comm):
        r = comm.rank
        return run_stage_step(stages[r], r, n, micro if r == 0 else None, grads if r == n - 1 else None,
                              (micro[0].shape[0], CFG.seq_len, CFG.hidden), m, None,
                              send=comm.send, recv=comm.recv, keep_output=True)

    group = ThreadGroup(n)
    steps = group.run(rank)
    for got, want in zip(steps[-1].output, ref_out):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    for rng, stage in zip(part.stage_layers, stages):
        for i, layer in zip(rng, stage):
            for p, q in zip(layer.parameters(), ref[i].parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-12, atol=1e-14)
    # Inner boundaries: one send and one recv per micro-batch each way on each side.
    assert group.calls == [2 * m if r in (0, n - 1) else 4 * m for r in range(n)]
    for s in steps:
        assert s.wall_s > 0 and s.compute_s > 0 and s.comm_s >= 0


def test_optimizer_step_updates_stage_weights():
    layers, micro, grads = setup(1)
    stage = nn.Sequential(*layers)
    before = [p.detach().clone() for p in stage.parameters()]
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    ThreadGroup(1).run(lambda comm: run_stage_step(stage, 0, 1, micro, grads, (1,), 1, opt,
                                                   send=comm.send, recv=comm.recv))
    assert all(p.grad is None for p in stage.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, stage.parameters()))


def test_stage_inputs_are_required():
    layers, micro, grads = setup(1)
    with pytest.raises(ValueError, match="stage 0 needs micro_inputs"):
        run_stage_step(nn.Sequential(*layers), 0, 1, None, grads, (1,), 1, None, send=None, recv=None)
    with pytest.raises(ValueError, match="last stage"):
        run_stage_step(nn.Sequential(*layers), 0, 1, micro, None, (1,), 1, None, send=None, recv=None)


def test_layer_loads_one_per_layer_and_head_is_heaviest():
    cfg = DecoderConfig(layers=2, hidden=32, heads=2, seq_len=16, batch=2, mode="train")
    layers = build_layers(cfg, 32768, "cpu")
    loads = layer_loads(layers, make_input(cfg, "cpu"), lambda out: torch.ones_like(out), repeats=3)
    assert len(loads) == 3 and all(x > 0 for x in loads)
    assert loads[-1] > max(loads[:-1])  # a 32 x 32768 head: ~80x a 32-wide block's FLOPs


def test_build_layers_same_seed_same_weights():
    a, b = build_layers(CFG, VOCAB, "cpu", seed=4), build_layers(CFG, VOCAB, "cpu", seed=4)
    assert len(a) == CFG.layers + 1
    for la, lb in zip(a, b):
        for p, q in zip(la.parameters(), lb.parameters()):
            assert torch.equal(p, q)
    assert len(build_layers(CFG, 0, "cpu")) == CFG.layers


def test_stage_alone_does_the_stage_work_of_a_pipeline_step():
    from pytest_genai.dabench.level2.pipeline import stage_compute_alone

    layers, micro, grads = setup(2)
    ref = nn.Sequential(*copy.deepcopy(layers))
    run_sequential_step(ref, micro, grads, None)
    with torch.no_grad():
        entering = [nn.Sequential(*layers[:-1])(x) for x in micro]
    head = copy.deepcopy(layers[-1])
    ticks = iter([10.0, 12.5])
    seconds = stage_compute_alone(head, entering, grads, None, input_grad=True, clock=lambda: next(ticks))
    assert seconds == 2.5
    for p, q in zip(head.parameters(), ref[-1].parameters()):  # same forwards + backwards over the micro-batches
        torch.testing.assert_close(p.grad, q.grad)
