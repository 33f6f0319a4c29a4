"""Tensor parallelism (Megatron-LM style) of the Level 1 decoder block, built from a full block's weights.

A rank holds ``heads / world`` attention heads and ``ffn_hidden / world`` FFN columns:

* QKV and FC1 are column parallel (each rank computes its slice of the outputs from the full input);
* the attention output projection and FC2 are row parallel (each rank multiplies its slice of the inputs, the
  partial products are summed by an all-reduce; the bias is added once, after the sum);
* LayerNorms, residuals and biases of row-parallel layers are replicated (their inputs are identical on all ranks,
  so their gradients are too).

Two autograd functions carry the communication (Shoeybi et al., Megatron-LM, 2019, "f" and "g"):
:func:`copy_to_ranks` (identity forward, all-reduce of the gradient backward) before each column-parallel layer and
:func:`reduce_from_ranks` (all-reduce forward, identity backward) after each row-parallel layer: two all-reduces
per block forward and two backward, each of a ``tokens x hidden`` tensor.

``all_reduce`` is any in-place sum over the ranks (:meth:`pytest_genai.dabench.level2.comm.TimedComm.all_reduce` in a
run, a thread-backed group in tests). torch is imported inside functions.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

AllReduce = Callable[[Any], Any]


@functools.cache
def _functions() -> tuple[Any, Any]:
    """The two autograd functions, defined once on first use (so that importing this module does not import torch)."""
    import torch

    class CopyToRanks(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor, all_reduce: AllReduce) -> torch.Tensor:
            ctx.all_reduce = all_reduce
            return x.view_as(x)

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
            return ctx.all_reduce(grad.contiguous().clone()), None

    class ReduceFromRanks(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor, all_reduce: AllReduce) -> torch.Tensor:
            return all_reduce(x.contiguous().clone())

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
            return grad, None

    return CopyToRanks, ReduceFromRanks


def copy_to_ranks(x: Any, all_reduce: AllReduce) -> Any:
    """Identity forward; backward sums the input gradient over the ranks ("f")."""
    return _functions()[0].apply(x, all_reduce)


def reduce_from_ranks(x: Any, all_reduce: AllReduce) -> Any:
    """Sum of the ranks' partial results forward; identity backward ("g")."""
    return _functions()[1].apply(x, all_reduce)


def shard_slices(hidden: int, heads: int, ffn_hidden: int, rank: int, world: int) -> dict[str, Any]:
    """Row / column index ranges of rank ``rank``'s shards (pure; used for building and for checking gradients).

    ``qkv_rows``: three ranges (q, k, v rows of the fused ``3h x h`` weight); ``proj_cols``: input columns of the
    projection; ``fc1_rows`` / ``fc2_cols``: the FFN slice.
    """
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank={rank} must be in [0, world={world})")
    if heads % world or ffn_hidden % world:
        raise ValueError(f"heads={heads} and ffn_hidden={ffn_hidden} must be divisible by world={world}")
    head_dim = hidden // heads
    width = heads // world * head_dim
    lo = rank * width
    f = ffn_hidden // world
    return {
        "qkv_rows": tuple(range(part * hidden + lo, part * hidden + lo + width) for part in range(3)),
        "proj_cols": range(lo, lo + width),
        "fc1_rows": range(rank * f, (rank + 1) * f),
        "fc2_cols": range(rank * f, (rank + 1) * f),
    }


def _tp_block_class() -> Any:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class TensorParallelBlock(nn.Module):
        """One rank's shard of a decoder block; forward matches the full block's (see module docstring)."""

        def __init__(self, full: nn.Module, rank: int, world: int, all_reduce: AllReduce) -> None:
            super().__init__()
            h = full.ln1.normalized_shape[0]
            ffn = full.fc1.out_features
            s = shard_slices(h, full.heads, ffn, rank, world)
            self.all_reduce = all_reduce
            self.heads = full.heads // world
            self.head_dim = full.head_dim
            self.attention = full.attention
            self.causal = full.causal
            self.ln1 = _copy_module(full.ln1)
            self.ln2 = _copy_module(full.ln2)
            rows = torch.cat([torch.arange(r.start, r.stop) for r in s["qkv_rows"]])
            self.qkv = _linear_from(full.qkv.weight[rows], full.qkv.bias[rows])
            cols = slice(s["proj_cols"].start, s["proj_cols"].stop)
            self.proj = _linear_from(full.proj.weight[:, cols], None)
            self.proj_bias = nn.Parameter(full.proj.bias.detach().clone())
            f1 = slice(s["fc1_rows"].start, s["fc1_rows"].stop)
            self.fc1 = _linear_from(full.fc1.weight[f1], full.fc1.bias[f1])
            self.fc2 = _linear_from(full.fc2.weight[:, f1], None)
            self.fc2_bias = nn.Parameter(full.fc2.bias.detach().clone())
            mask = getattr(full, "mask", None)
            self.register_buffer("mask", None if mask is None else mask.clone(), persistent=False)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            from pytest_genai.dabench.model import attention_core

            return attention_core(q, k, v, attention=self.attention, causal=self.causal, mask=self.mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            h1 = copy_to_ranks(self.ln1(x), self.all_reduce)
            q, k, v = self.qkv(h1).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
            x = x + reduce_from_ranks(self.proj(self.attend(q, k, v)), self.all_reduce) + self.proj_bias
            h2 = copy_to_ranks(self.ln2(x), self.all_reduce)
            g = F.gelu(self.fc1(h2), approximate="tanh")
            return x + reduce_from_ranks(self.fc2(g), self.all_reduce) + self.fc2_bias

    return TensorParallelBlock


def _copy_module(module: Any) -> Any:
    import copy

    return copy.deepcopy(module)


def _linear_from(weight: Any, bias: Any) -> Any:
    from torch import nn

    out_features, in_features = weight.shape
    layer = nn.Linear(in_features, out_features, bias=bias is not None, device=weight.device, dtype=weight.dtype)
    layer.weight.data.copy_(weight.detach())
    if bias is not None:
        layer.bias.data.copy_(bias.detach())
    return layer


def shard_stack(full_stack: Any, rank: int, world: int, all_reduce: AllReduce) -> Any:
    """A ``nn.Sequential`` of :class:`TensorParallelBlock` shards of every block of ``full_stack`` (a Level 1
    :func:`pytest_genai.dabench.model.build_stack` module) for ``rank`` of ``world``."""
    from torch import nn

    cls = _tp_block_class()
    return nn.Sequential(*(cls(block, rank, world, all_reduce) for block in full_stack.blocks))
