import dataclasses

import pytest

torch = pytest.importorskip("torch")

from pytest_genai.dabench import counts, model  # noqa: E402
from pytest_genai.dabench.config import DecoderConfig  # noqa: E402

CPU = torch.device("cpu")


@pytest.mark.parametrize("attention", ["math", "sdpa"])
def test_stack_shape_params_and_causality(attention):
    cfg = DecoderConfig(layers=2, hidden=32, heads=4, seq_len=8, batch=2, attention=attention)
    stack = model.build_stack(cfg, CPU)
    assert sum(p.numel() for p in stack.parameters()) == cfg.params
    x = model.make_input(cfg, CPU)
    y = stack(x)
    assert y.shape == x.shape
    x2 = x.clone()
    x2[:, -1] += 1.0  # changing the last token must not change earlier positions (causal mask)
    assert torch.allclose(stack(x2)[:, :-1], y[:, :-1], atol=1e-5)


def test_math_and_sdpa_attention_agree():
    cfg = DecoderConfig(layers=1, hidden=32, heads=4, seq_len=8)
    x = model.make_input(cfg, CPU)
    y_math = model.build_stack(cfg, CPU)(x)
    y_sdpa = model.build_stack(dataclasses.replace(cfg, attention="sdpa"), CPU)(x)
    assert torch.allclose(y_math, y_sdpa, atol=1e-5)


def test_train_step_updates_weights_and_releases_grads():
    cfg = DecoderConfig(layers=1, hidden=16, heads=2, seq_len=4, mode="train")
    stack = model.build_stack(cfg, CPU)
    before = stack.blocks[0].fc1.weight.detach().clone()
    model.make_step(cfg, stack, model.make_input(cfg, CPU))()
    assert not torch.equal(before, stack.blocks[0].fc1.weight)
    assert all(p.grad is None for p in stack.parameters())


def test_op_class_steps_run_exactly_the_counted_forward_ops():
    from torch.utils.flop_counter import FlopCounterMode

    cfg = DecoderConfig(layers=1, hidden=32, heads=2, seq_len=8, batch=2)
    stack = model.build_stack(cfg, CPU)
    steps = model.op_class_steps(stack.blocks[0], model.make_input(cfg, CPU))
    by_class = counts.class_counts(counts.layer_forward_ops(cfg))
    for name, step in steps.items():
        with FlopCounterMode(display=False) as counter:
            step()
        assert counter.get_total_flops() == by_class[name].flops, name


def test_layer_steps_one_per_layer():
    cfg = DecoderConfig(layers=3, hidden=16, heads=2, seq_len=4, mode="train")
    stack = model.build_stack(cfg, CPU)
    steps = model.layer_steps(cfg, stack, model.make_input(cfg, CPU))
    assert len(steps) == 3
    steps[1]()
    assert all(p.grad is None for p in stack.parameters())


def test_the_stack_is_built_on_its_device_and_never_whole_in_fp32(monkeypatch):
    """A CUDA stack of tens of 4096-hidden layers was built on the host in fp32 and moved: tens of GB of host RAM and
    minutes of single-thread init per capacity probe. The meta device stands in for the GPU: every weight must be
    initialized there, each block must be cast before the next one exists, and a bf16 stack must hold its fp32
    twin's weights."""
    from torch import nn

    seen, events = [], []
    reset, to = nn.Linear.reset_parameters, nn.Module.to

    def spy(self):
        seen.append(self.weight.device.type)
        events.append("init")
        reset(self)

    def spy_to(self, *args, **kwargs):
        events.append(f"cast {type(self).__name__}")
        return to(self, *args, **kwargs)

    monkeypatch.setattr(nn.Linear, "reset_parameters", spy)
    monkeypatch.setattr(nn.Module, "to", spy_to)
    big = DecoderConfig(layers=3, hidden=256, heads=4, seq_len=16, batch=1, dtype="bf16", mode="train")
    stack = model.build_stack(big, torch.device("meta"))
    assert seen == ["meta"] * 12
    assert events == (["init"] * 4 + ["cast DecoderBlock"]) * 3  # each block cast before the next one is made
    monkeypatch.setattr(nn.Module, "to", to)
    assert all(p.device.type == "meta" and p.dtype == torch.bfloat16 for p in stack.parameters())
    monkeypatch.setattr(nn.Linear, "reset_parameters", reset)
    small = DecoderConfig(layers=2, hidden=64, heads=4, seq_len=16, batch=1, dtype="fp32", mode="forward")
    fp32 = model.build_stack(small, CPU, seed=3)
    bf16 = model.build_stack(dataclasses.replace(small, dtype="bf16"), CPU, seed=3)
    for a, b in zip(fp32.parameters(), bf16.parameters()):
        assert b.dtype == torch.bfloat16 and torch.equal(a.to(torch.bfloat16), b)
