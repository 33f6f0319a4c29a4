"""What a fine-tuning job's two rank paths share: the torch worker (:mod:`.worker`) and the Gaudi path
(:mod:`.gaudi`) write the same result schema and train on the same synthetic batches. (Kept apart so that the worker
imports the Gaudi path and not the other way round.)"""
from __future__ import annotations

from typing import Any

SCHEMA = "pytest-genai-train/1"


def synthetic_batch(seed: int, step: int, rank: int, micro_batch: int, seq_len: int, vocab: int, device: Any = None):
    """Random token ids for (step, rank): the same on every run, different per rank and step.

    The global batch of a step is the ranks' micro-batches concatenated in rank order.
    """
    import torch

    gen = torch.Generator().manual_seed((seed * 1_000_003 + step) * 4099 + rank)
    ids = torch.randint(0, vocab, (micro_batch, seq_len), generator=gen)
    return ids if device is None else ids.to(device)
