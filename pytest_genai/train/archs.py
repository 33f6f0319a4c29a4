"""The paper's fine-tuning architectures (Paper A, A2) as data, their scaled variants and parameter counts.

Paper A fine-tunes Llama-3.1-8B, Gemma-2-27B and Llama-3.3-70B. Their shapes are public architecture facts,
copied from each model's ``config.json`` on the Hugging Face Hub (sources below). Throughput does not depend on
weight values, so the benchmarks build these models from config with random weights and say so in their ids.

Scaled variants keep each family's proportions (GQA ratio, FFN ratio, head size where it fits) and shrink
layers, width and vocabulary so that the same code runs on two CPU cores in seconds (``tiny``; four layers, so
that sharding's per-layer collectives show, as they do at full size) or exercises the memory planner with model
states that dominate a process's memory (``small``).

Everything here is pure Python: no torch import.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

FAMILIES = ("llama", "gemma2")


@dataclass(frozen=True)
class ArchSpec:
    """A decoder-only transformer's shape: what memory and FLOPs depend on.

    ``head_dim`` is given explicitly because Gemma-2 does not use ``hidden // heads``.
    """

    name: str
    family: str
    num_layers: int
    hidden: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tie_embeddings: bool
    max_positions: int
    source: str = ""
    scale: str = "full"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"ArchSpec.family={self.family!r} is unknown; use one of {FAMILIES}")
        for field in ("num_layers", "hidden", "num_heads", "num_kv_heads", "head_dim", "ffn", "vocab", "max_positions"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"ArchSpec.{field}={value!r} must be a positive int")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"ArchSpec.num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}; "
                "grouped-query attention needs heads divisible by KV heads"
            )

    @property
    def id(self) -> str:
        return self.name if self.scale == "full" else f"{self.name}@{self.scale}"

    @property
    def q_dim(self) -> int:
        """Width of the query projection (heads × head size)."""
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of each of the key and value projections (KV heads × head size)."""
        return self.num_kv_heads * self.head_dim

    @property
    def norms_per_layer(self) -> int:
        """RMSNorms per decoder layer: Llama has 2; Gemma-2 adds a post-attention and a pre-/post-FFN norm (4)."""
        return 4 if self.family == "gemma2" else 2

    def layer_linear_params(self) -> int:
        """Weights of the linear layers of one decoder layer (q, k, v, o; gate, up, down). No biases."""
        attention = self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden
        mlp = 3 * self.hidden * self.ffn
        return attention + mlp

    def layer_params(self) -> int:
        """All parameters of one decoder layer: linear weights plus the RMSNorm gains."""
        return self.layer_linear_params() + self.norms_per_layer * self.hidden

    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    def param_count(self) -> int:
        """Total parameters: embeddings, layers, final norm and (unless tied) the LM head."""
        head = 0 if self.tie_embeddings else self.vocab * self.hidden
        return self.embedding_params() + self.num_layers * self.layer_params() + self.hidden + head

    def matmul_params(self) -> int:
        """Parameters that take part in a matrix multiply per token: every linear layer plus the LM head.

        The embedding lookup is a gather, not a matmul; with tied embeddings the same matrix is still
        multiplied once, as the LM head. Norm gains are elementwise. This is the ``N`` of ``6·N·tokens``.
        """
        return self.num_layers * self.layer_linear_params() + self.vocab * self.hidden


LLAMA_31_8B = ArchSpec(
    name="llama-3.1-8b",
    family="llama",
    num_layers=32,
    hidden=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    ffn=14336,
    vocab=128256,
    tie_embeddings=False,
    max_positions=131072,
    source="huggingface.co/meta-llama/Llama-3.1-8B config.json",
)

GEMMA_2_27B = ArchSpec(
    name="gemma-2-27b",
    family="gemma2",
    num_layers=46,
    hidden=4608,
    num_heads=32,
    num_kv_heads=16,
    head_dim=128,
    ffn=36864,
    vocab=256000,
    tie_embeddings=True,
    max_positions=8192,
    source="huggingface.co/google/gemma-2-27b config.json",
)

LLAMA_33_70B = ArchSpec(
    name="llama-3.3-70b",
    family="llama",
    num_layers=80,
    hidden=8192,
    num_heads=64,
    num_kv_heads=8,
    head_dim=128,
    ffn=28672,
    vocab=128256,
    tie_embeddings=False,
    max_positions=131072,
    source="huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json",
)

PAPER_ARCHS: dict[str, ArchSpec] = {a.name: a for a in (LLAMA_31_8B, GEMMA_2_27B, LLAMA_33_70B)}

#: LLaMA-7B as optimum-habana's CI fine-tunes it (``huggyllama/llama-7b``, tests/utils.py of huggingface/optimum-habana):
#: not a paper model, the architecture of a vendor's published row (pytest_genai.reference), run beside it at full
#: scale. Shapes: the LLaMA paper's 7B row (Touvron et al. 2023, Table 2: dim 4096, 32 heads, 32 layers) and the
#: ``huggyllama/llama-7b`` config.json (intermediate 11008, vocabulary 32000, 2048 positions, untied head, no GQA).
LLAMA_7B = ArchSpec(
    name="llama-7b",
    family="llama",
    num_layers=32,
    hidden=4096,
    num_heads=32,
    num_kv_heads=32,
    head_dim=128,
    ffn=11008,
    vocab=32000,
    tie_embeddings=False,
    max_positions=2048,
    source="huggingface.co/huggyllama/llama-7b config.json",
)

#: Architectures run only to compare with a vendor's published number (never part of the paper matrix).
REFERENCE_ARCHS: dict[str, ArchSpec] = {LLAMA_7B.name: LLAMA_7B}
#: Every architecture a throughput config may name.
ARCHS: dict[str, ArchSpec] = {**PAPER_ARCHS, **REFERENCE_ARCHS}


@dataclass(frozen=True)
class Scale:
    """How to shrink an architecture: fixed width, depth and vocabulary; proportions kept."""

    name: str
    num_layers: int
    hidden: int
    head_dim: int
    vocab: int
    max_positions: int

    def __post_init__(self) -> None:
        for field in ("num_layers", "hidden", "head_dim", "vocab", "max_positions"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Scale.{field}={value!r} must be a positive int")
        if self.hidden % self.head_dim:
            raise ValueError(f"Scale.hidden={self.hidden} must be a multiple of Scale.head_dim={self.head_dim}")


SCALES: dict[str, Scale | None] = {
    "tiny": Scale("tiny", num_layers=4, hidden=64, head_dim=16, vocab=1024, max_positions=512),
    "small": Scale("small", num_layers=4, hidden=512, head_dim=64, vocab=32768, max_positions=2048),
    "full": None,
}


def scaled(arch: ArchSpec, scale: str) -> ArchSpec:
    """``arch`` shrunk to ``scale`` ('tiny', 'small' or 'full'), keeping its GQA ratio and FFN/hidden ratio."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is unknown; use one of {sorted(SCALES)} (option --genai-scale)")
    target = SCALES[scale]
    if target is None:
        return arch
    heads = target.hidden // target.head_dim
    gqa = arch.num_heads // arch.num_kv_heads
    kv_heads = max(1, heads // gqa)
    while heads % kv_heads:
        kv_heads -= 1
    ffn = round(target.hidden * arch.ffn / arch.hidden)
    return dataclasses.replace(
        arch,
        num_layers=target.num_layers,
        hidden=target.hidden,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=target.head_dim,
        ffn=ffn,
        vocab=target.vocab,
        max_positions=target.max_positions,
        scale=scale,
    )


def get_arch(name: str, scale: str = "full") -> ArchSpec:
    """One of the paper's (or a reference row's) architectures by name, at ``scale``."""
    try:
        arch = ARCHS[name]
    except KeyError:
        raise ValueError(f"model={name!r} is unknown; use one of {sorted(ARCHS)}") from None
    return scaled(arch, scale)
