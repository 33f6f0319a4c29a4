"""Where the equivalence checks draw their weights: on the host, whatever device the rank runs on."""
import types

import pytest

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.level2 import checks
from pytest_genai.dabench.level2.config import ParallelConfig

W = DecoderConfig(layers=2, hidden=32, heads=2, seq_len=8, batch=4, mode="train")


class Built(Exception):
    pass


@pytest.mark.parametrize("strategy, builder", [("dp", "pytest_genai.dabench.model.build_stack"),
                                               ("tp", "pytest_genai.dabench.model.build_stack"),
                                               ("pp", "pytest_genai.dabench.level2.pipeline.build_layers")])
def test_every_check_builds_its_model_on_the_host_generator(monkeypatch, strategy, builder):
    """A GPU's generator draws by the kernel's grid (the SM count): ranks on two GPU models would hold two models."""
    pytest.importorskip("torch")
    seen = []

    def spy(cfg, *args, **kwargs):
        seen.append(str(args[-1]))  # the device: build_stack(cfg, device), build_layers(cfg, vocab, device)
        raise Built

    monkeypatch.setattr(builder, spy)
    ctx = types.SimpleNamespace(rank=0, world=2, device="meta", sync=lambda: None)
    with pytest.raises(Built):
        pp = strategy == "pp"
        cfg = ParallelConfig(strategy, W, micro_batches=2 if pp else 1, head_vocab=16 if pp else 0)
        checks.CHECKS[strategy](cfg, ctx)
    assert seen == ["cpu"]
