"""The decoder-block stack as a torch module, and the callables the benchmark times.

torch is imported inside functions only. The block is GPT-2 style (pre-LayerNorm, biased linears, tanh GELU):

    x -> LN1 -> QKV -> attention (causal) -> proj -> +x -> LN2 -> FC1 -> GELU -> FC2 -> +

Each op class of :mod:`pytest_genai.dabench.counts` is a separate method, so that one class can be timed alone on
the block's own intermediate tensors (:func:`op_class_steps`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pytest_genai.dabench.config import DecoderConfig

TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, TORCH_DTYPES[name])


def attention_core(q: Any, k: Any, v: Any, *, attention: str, causal: bool, mask: Any = None) -> Any:
    """Attention on ``[B, heads, S, d]`` tensors, merged back to ``[B, S, heads * d]``: ``"sdpa"`` is torch's
    fused kernel; ``"math"`` is the explicit ``softmax(QK^T / sqrt(d)) V`` with ``mask`` (True = hidden) applied."""
    from torch.nn import functional as F

    b, nh, s, d = q.shape
    if attention == "sdpa":
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    else:
        scores = (q * (1.0 / math.sqrt(d))) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill_(mask, float("-inf"))
        ctx = scores.softmax(dim=-1) @ v
    return ctx.transpose(1, 2).reshape(b, s, nh * d)


def _modules() -> Any:
    """Module classes, defined on first use so that importing this file does not import torch."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class DecoderBlock(nn.Module):
        def __init__(self, cfg: DecoderConfig) -> None:
            super().__init__()
            h = cfg.hidden
            self.heads = cfg.heads
            self.head_dim = cfg.head_dim
            self.attention = cfg.attention
            self.causal = cfg.causal
            self.ln1 = nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h)
            self.fc1 = nn.Linear(h, cfg.ffn_hidden)
            self.fc2 = nn.Linear(cfg.ffn_hidden, h)
            if cfg.attention == "math" and cfg.causal:
                mask = torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).triu(1)
                self.register_buffer("mask", mask, persistent=False)
            else:
                self.mask = None

        # -- the op classes ------------------------------------------------------------------------------------
        def split_heads(self, qkv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            b, s, _ = qkv.shape
            q, k, v = qkv.view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
            return q, k, v

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            """Attention core on [B, heads, S, d] tensors; returns the merged context [B, S, hidden]."""
            return attention_core(q, k, v, attention=self.attention, causal=self.causal, mask=self.mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.split_heads(self.qkv(self.ln1(x)))
            x = x + self.proj(self.attend(q, k, v))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

        def intermediates(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
            """Every tensor one forward produces, for timing one op class on its real inputs."""
            with torch.no_grad():
                h1 = self.ln1(x)
                qkv = self.qkv(h1)
                q, k, v = (t.contiguous() for t in self.split_heads(qkv))
                ctx = self.attend(q, k, v)
                a = self.proj(ctx)
                x2 = x + a
                h2 = self.ln2(x2)
                f1 = self.fc1(h2)
                g = F.gelu(f1, approximate="tanh")
                f2 = self.fc2(g)
            return {"x": x, "h1": h1, "q": q, "k": k, "v": v, "ctx": ctx, "a": a, "x2": x2, "h2": h2,
                    "f1": f1, "g": g, "f2": f2}

    class DecoderStack(nn.Module):
        def __init__(self, cfg: DecoderConfig, dtype: Any = None) -> None:
            super().__init__()
            # each block is cast as soon as it exists, so an fp32 copy of the whole stack never exists at once
            self.blocks = nn.ModuleList(DecoderBlock(cfg).to(dtype=dtype) for _ in range(cfg.layers))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x

    return DecoderBlock, DecoderStack


def build_stack(cfg: DecoderConfig, device: Any, *, seed: int = 0) -> Any:
    """The stack of ``cfg.layers`` blocks in ``cfg.dtype`` on ``device`` (a torch.device), seeded.

    Built on the device itself: built on the host and moved, a 4096-hidden stack of tens of layers (the CUDA capacity
    search, Level 1 at hidden 8192) spent minutes initializing tens of GB of fp32 on the host's pinned single thread,
    and needed that much host RAM. Each block is initialized in fp32 and then cast, so two stacks of one seed hold
    the same weights whatever their dtypes (the precision sweep compares a bf16 stack with its fp32 twin), and on
    the CPU the weights are those of the host-built stack."""
    import torch

    _, DecoderStack = _modules()
    torch.manual_seed(seed)
    with torch.device(device):
        return DecoderStack(cfg, dtype=torch_dtype(cfg.dtype))


def make_input(cfg: DecoderConfig, device: Any, *, seed: int = 1) -> Any:
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(cfg.batch, cfg.seq_len, cfg.hidden, generator=gen)
    return x.to(device=device, dtype=torch_dtype(cfg.dtype))


def make_step(cfg: DecoderConfig, stack: Any, x: Any, autocast: tuple[str, Any] | None = None) -> Callable[[], None]:
    """One step of the workload: a forward pass (``forward``), or forward + backward + AdamW update (``train``).

    Training back-propagates a fixed output gradient (no loss op, so every counted op is a block op); gradients are
    released after each update (``zero_grad(set_to_none=True)``). With ``autocast=(device_type, dtype)`` the forward
    runs under ``torch.autocast`` and the backward and update outside it (the recommended AMP pattern).
    """
    import contextlib

    import torch

    def amp() -> Any:
        if autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=autocast[0], dtype=autocast[1])

    if cfg.mode == "forward":
        stack.eval()

        def forward_step() -> None:
            with torch.inference_mode(), amp():
                stack(x)

        return forward_step

    stack.train()
    optimizer = torch.optim.AdamW(stack.parameters(), lr=1e-4)
    grad_out = torch.full_like(x, 1.0 / x.numel())

    def train_step() -> None:
        with amp():
            out = stack(x)
        out.float().backward(grad_out)  # a no-op cast in fp32
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return train_step


def layer_steps(cfg: DecoderConfig, stack: Any, x: Any) -> list[Callable[[], None]]:
    """One callable per block running that block's share of a step on the same input (its per-layer load).

    ``forward``: the block's forward. ``train``: the block's forward and backward (the optimizer is per stack).
    """
    import torch

    steps: list[Callable[[], None]] = []
    grad_out = torch.full_like(x, 1.0 / x.numel())
    for block in stack.blocks:
        if cfg.mode == "forward":

            def run(block: Any = block) -> None:
                with torch.inference_mode():
                    block(x)

        else:

            def run(block: Any = block) -> None:
                block(x).backward(grad_out)
                for p in block.parameters():
                    p.grad = None

        steps.append(run)
    return steps


def op_class_steps(block: Any, x: Any) -> dict[str, Callable[[], None]]:
    """Forward ops of one block grouped by op class, each run alone on the block's own intermediates.

    ``matmul``: QKV, proj, FC1, FC2; ``attention``: the attention core (scale, scores, mask, softmax, context or the
    fused kernel); ``elementwise``: both LayerNorms, GELU and both residual adds. Matches
    :func:`pytest_genai.dabench.counts.layer_forward_ops`.
    """
    import torch
    from torch.nn import functional as F

    t = block.intermediates(x)

    def matmul() -> None:
        with torch.inference_mode():
            block.qkv(t["h1"])
            block.proj(t["ctx"])
            block.fc1(t["h2"])
            block.fc2(t["g"])

    def attention() -> None:
        with torch.inference_mode():
            block.attend(t["q"], t["k"], t["v"])

    def elementwise() -> None:
        with torch.inference_mode():
            block.ln1(t["x"])
            torch.add(t["x"], t["a"])
            block.ln2(t["x2"])
            F.gelu(t["f1"], approximate="tanh")
            torch.add(t["x2"], t["f2"])

    return {"matmul": matmul, "attention": attention, "elementwise": elementwise}
