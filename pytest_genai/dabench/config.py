"""The DABench-LLM Level 1 workload as a frozen config, and the default sweeps per device kind.

The evaluation unit of Paper B is a GPT-style decoder block; a config fixes the stack (layers, hidden size,
heads, FFN ratio), the input (batch, sequence length), the numeric format and what one step is (forward only,
or a training step: forward, backward and an AdamW update).
"""
from __future__ import annotations

import dataclasses
import itertools

DTYPES = ("fp32", "bf16", "fp16")
MODES = ("forward", "train")
ATTENTION = ("math", "sdpa")
SCALES = ("tiny", "small", "full")
BYTES_PER_ELEMENT = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """One point of the sweep: a stack of ``layers`` identical pre-LayerNorm decoder blocks.

    ``attention="math"`` materializes the S x S score matrix (explicit matmul, mask, softmax, matmul) so that every
    op is visible to counters and timers; ``"sdpa"`` uses ``torch.nn.functional.scaled_dot_product_attention``
    (a fused kernel on accelerators, never materializing S x S).
    """

    layers: int = 2
    hidden: int = 64
    heads: int = 1
    ffn_ratio: int = 4
    seq_len: int = 128
    batch: int = 1
    dtype: str = "fp32"
    mode: str = "forward"
    attention: str = "math"
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "ffn_ratio", "seq_len", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DecoderConfig.{name} must be a positive int, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(
                f"DecoderConfig.hidden ({self.hidden}) must be divisible by heads ({self.heads}); "
                f"pick heads from the divisors of hidden, e.g. heads={max(1, self.hidden // 64)}"
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"DecoderConfig.dtype {self.dtype!r} is not supported; use one of {DTYPES}")
        if self.mode not in MODES:
            raise ValueError(f"DecoderConfig.mode {self.mode!r} is not supported; use one of {MODES}")
        if self.attention not in ATTENTION:
            raise ValueError(f"DecoderConfig.attention {self.attention!r} is not supported; use one of {ATTENTION}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"DecoderConfig.causal must be a bool, got {self.causal!r}")

    @property
    def id(self) -> str:
        """Readable parametrize id, e.g. ``L4-h512-a8-s128-b1-fp32-forward``."""
        parts = [
            f"L{self.layers}",
            f"h{self.hidden}",
            f"a{self.heads}",
            f"s{self.seq_len}",
            f"b{self.batch}",
            self.dtype,
            self.mode,
        ]
        if self.ffn_ratio != 4:
            parts.insert(3, f"f{self.ffn_ratio}")
        if self.attention != "math":
            parts.append(self.attention)
        if not self.causal:
            parts.append("bidir")
        return "-".join(parts)

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def ffn_hidden(self) -> int:
        return self.ffn_ratio * self.hidden

    @property
    def bytes_per_element(self) -> int:
        return BYTES_PER_ELEMENT[self.dtype]

    @property
    def params_per_layer(self) -> int:
        """Weights and biases of one block: two LayerNorms, QKV, output projection, two FFN linears."""
        h, f = self.hidden, self.ffn_hidden
        return 2 * (2 * h) + (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)

    @property
    def params(self) -> int:
        return self.layers * self.params_per_layer

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def default_heads(hidden: int) -> int:
    """GPT-style head width of 64 (one head below that)."""
    return max(1, hidden // 64)


def _grid(
    layers: tuple[int, ...],
    hiddens: tuple[int, ...],
    *,
    mode: str,
    dtype: str,
    attention: str,
    seq_len: int,
    batch: int,
) -> list[DecoderConfig]:
    return [
        DecoderConfig(
            layers=n,
            hidden=h,
            heads=default_heads(h),
            seq_len=seq_len,
            batch=batch,
            dtype=dtype,
            mode=mode,
            attention=attention,
        )
        for h, n in itertools.product(hiddens, layers)
    ]


def default_sweep(kind: str, scale: str = "tiny") -> tuple[DecoderConfig, ...]:
    """The layers x hidden (and batch, sequence) sweep for a device kind at a ``--genai-scale``.

    CPU sizes keep the whole ``tiny`` sweep well under two minutes on two cores and ``small`` within a few minutes;
    accelerator sizes grow up to configs that fill the chip (``full``).
    """
    if scale not in SCALES:
        raise ValueError(f"--genai-scale {scale!r} is not a DABench scale; use one of {SCALES}")
    if kind == "cpu":
        common = dict(dtype="fp32", attention="math", seq_len=128, batch=1)
        if scale == "tiny":
            configs = _grid((2, 4), (64, 256, 1024), mode="forward", **common)
            configs += _grid((2,), (128, 512), mode="train", **common)
        elif scale == "small":
            configs = _grid((2, 4, 8), (64, 128, 256, 512, 1024), mode="forward", **common)
            configs += _grid((2, 4), (128, 512), mode="train", **common)
            configs += _grid((2,), (256,), mode="forward", dtype="fp32", attention="math", seq_len=512, batch=1)
            configs += _grid((2,), (256,), mode="forward", dtype="fp32", attention="math", seq_len=128, batch=8)
        else:
            configs = _grid((2, 4, 8, 16), (64, 128, 256, 512, 1024, 2048), mode="forward", **common)
            configs += _grid((2, 4, 8), (128, 512, 1024), mode="train", **common)
        return tuple(configs)
    if kind in ("cuda", "hpu"):
        common = dict(dtype="bf16", attention="sdpa", seq_len=1024, batch=8)
        if scale == "tiny":
            configs = _grid((2, 4), (256, 1024, 4096, 8192), mode="forward", **common)
            configs += _grid((2,), (1024, 4096), mode="train", **common)
        elif scale == "small":
            configs = _grid((2, 4, 8), (256, 512, 1024, 2048, 4096, 8192), mode="forward", **common)
            configs += _grid((2, 4), (1024, 4096, 8192), mode="train", **common)
            configs += _grid((4,), (4096,), mode="forward", dtype="bf16", attention="sdpa", seq_len=4096, batch=2)
        else:
            configs = _grid((4, 8, 16, 32), (1024, 2048, 4096, 8192, 12288), mode="forward", **common)
            configs += _grid((4, 8, 16), (2048, 4096, 8192), mode="train", **common)
        return tuple(configs)
    if kind in ("wse", "rdu", "ipu"):
        # Paper B sweeps layers and hidden size on the dataflow chips with fp16 training steps.
        layers = (2, 4) if scale == "tiny" else (2, 4, 8, 16, 32, 64)
        hiddens = (768, 2048) if scale == "tiny" else (768, 1024, 2048, 4096)
        return tuple(_grid(layers, hiddens, mode="train", dtype="fp16", attention="math", seq_len=1024, batch=8))
    raise ValueError(f"no DABench sweep for device kind {kind!r}; use one of cpu, cuda, hpu, wse, rdu, ipu")


def capacity_config(kind: str) -> DecoderConfig:
    """The fixed-hidden training config whose largest layer count the capacity test searches for (layers=1)."""
    if kind == "cpu":
        return DecoderConfig(layers=1, hidden=256, heads=4, seq_len=128, batch=1, dtype="fp32", mode="train")
    if kind in ("cuda", "hpu"):
        return DecoderConfig(
            layers=1, hidden=4096, heads=32, seq_len=2048, batch=1, dtype="bf16", mode="train", attention="sdpa"
        )
    raise ValueError(f"no DABench capacity config for device kind {kind!r}; use cpu, cuda or hpu")
