"""Benchmark configurations for fine-tuning (Paper A, A2): frozen dataclasses, validated, with an ``id``.

``ThroughputConfig`` trains one of the paper's architectures, built from config with random weights (throughput
does not depend on weight values; the id says ``random``), for a few steps under one strategy.
``lora`` (a :class:`~pytest_genai.train.lora.LoraSpec`) trains LoRA adapters on a frozen base instead of every
weight (``None``: full fine-tuning); the paper-scale runs default to LoRA, as optimum-habana's recipes.
``WikitextConfig`` fine-tunes a real pretrained model on WikiText text to show that the training path learns.
Both travel to the workers as JSON (``to_json`` / ``from_json``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pytest_genai.train.archs import ARCHS, PAPER_ARCHS, SCALES
from pytest_genai.train.lora import LoraSpec

STRATEGIES = ("ddp", "fsdp", "zero2", "zero3")
INIT_MODES = ("auto", "eager", "deferred")


def init_mode(cfg: "ThroughputConfig", device_kind: str) -> str:
    """How a rank builds ``cfg``'s model: ``deferred`` (already sharded, on the device) or ``eager`` (whole, in host
    memory, then wrapped). ``auto``: deferred for FSDP and ZeRO-3 on accelerators, where models are large and each
    rank of a node building the whole fp32 model in the node's RAM is what fails first; eager on the CPU, where the
    ranks' tiny models are built whole as before."""
    if cfg.init != "auto":
        return cfg.init
    return "deferred" if cfg.strategy in ("fsdp", "zero3") and device_kind in ("cuda", "hpu") else "eager"
ATTENTION_MODES = ("unfused", "fused")  # the baseline first: its own row runs before the comparison
PRECISIONS = ("fp32", "amp")
METHODS = ("full", "lora")


def _positive_int(obj: Any, field: str) -> None:
    value = getattr(obj, field)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{type(obj).__name__}.{field}={value!r} must be a positive int")


def _choice(obj: Any, field: str, choices: tuple[str, ...]) -> None:
    value = getattr(obj, field)
    if value not in choices:
        raise ValueError(f"{type(obj).__name__}.{field}={value!r} is unknown; use one of {choices}")


@dataclass(frozen=True)
class ThroughputConfig:
    """One throughput run: architecture × scale × strategy × attention, ``steps`` steps of which ``warmup`` untimed.

    ``attention='fused'`` is Flash Attention where the device has it (CUDA: SDPA's flash backend; Gaudi:
    Habana fused SDPA) and plain SDPA on the CPU, which is labeled as such; ``'unfused'`` is eager
    attention (CUDA: SDPA's math backend).
    """

    model: str
    scale: str = "tiny"
    strategy: str = "ddp"
    attention: str = "fused"
    micro_batch: int = 2
    seq_len: int = 128
    steps: int = 8
    warmup: int = 3
    precision: str = "fp32"
    lr: float = 1e-3
    seed: int = 0
    lora: LoraSpec | None = None
    #: "auto": deferred for the sharded strategies (FSDP, ZeRO-3) on accelerators, eager otherwise
    #: (:func:`init_mode`); "deferred" builds already sharded (never the whole fp32 model in host RAM).
    init: str = "auto"

    def __post_init__(self) -> None:
        _choice(self, "init", INIT_MODES)
        if self.init == "deferred" and self.strategy not in ("fsdp", "zero3"):
            raise ValueError(f"ThroughputConfig.init='deferred' needs a sharded strategy (fsdp, zero3), not "
                             f"{self.strategy!r}: DDP holds the whole model on every rank")
        if isinstance(self.lora, dict):  # from JSON
            object.__setattr__(self, "lora", LoraSpec(**self.lora))
        if self.lora is not None and not isinstance(self.lora, LoraSpec):
            raise ValueError(f"ThroughputConfig.lora={self.lora!r} must be a LoraSpec or None (full fine-tuning)")
        if self.model not in ARCHS:
            raise ValueError(f"ThroughputConfig.model={self.model!r} is unknown; use one of {sorted(ARCHS)}")
        _choice(self, "scale", tuple(SCALES))
        _choice(self, "strategy", STRATEGIES)
        _choice(self, "attention", ATTENTION_MODES)
        _choice(self, "precision", PRECISIONS)
        for field in ("micro_batch", "seq_len", "steps"):
            _positive_int(self, field)
        if not isinstance(self.warmup, int) or not 2 <= self.warmup < self.steps:
            raise ValueError(
                f"ThroughputConfig.warmup={self.warmup!r} must be an int in [2, steps={self.steps}): the first two "
                "warm-up steps carry the memory probe, and some steps must be timed after them"
            )
        if not self.lr > 0:
            raise ValueError(f"ThroughputConfig.lr={self.lr!r} must be positive")

    @property
    def id(self) -> str:
        size = self.model if self.scale == "full" else f"{self.model}@{self.scale}"
        method = "" if self.lora is None else f"-{self.lora.id}"
        init = "" if self.init == "auto" else f"-init_{self.init}"  # auto: the ids of earlier runs stand
        return (f"{size}-random-{self.strategy}-attn_{self.attention}-{self.precision}"
                f"-mb{self.micro_batch}-s{self.seq_len}{method}{init}")

    @property
    def method(self) -> str:
        """'lora' (adapters on a frozen base) or 'full' (every weight trains)."""
        return "full" if self.lora is None else "lora"

    @property
    def sharded(self) -> str | None:
        """The sharding strategy compared against DDP (claims A2.ddp_vs_*), or None for DDP."""
        return None if self.strategy == "ddp" else self.strategy

    def to_json(self) -> dict[str, Any]:
        return {"kind": "throughput", **dataclasses.asdict(self),
                "lora": None if self.lora is None else self.lora.to_json()}


@dataclass(frozen=True)
class WikitextConfig:
    """A real fine-tune of a pretrained causal LM on WikiText-2 text: held-out loss before and after.

    ``model_path`` is a local folder with safetensors weights (no download); ``text_path`` a WikiText raw file.
    """

    model_path: str
    text_path: str
    model_name: str = "smollm2-135m"
    strategy: str = "ddp"
    micro_batch: int = 1
    seq_len: int = 128
    steps: int = 8
    eval_blocks: int = 8
    lr: float = 1e-4
    seed: int = 0

    def __post_init__(self) -> None:
        for field in ("model_path", "text_path", "model_name"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise ValueError(f"WikitextConfig.{field} must be a non-empty string")
        _choice(self, "strategy", STRATEGIES)
        for field in ("micro_batch", "seq_len", "steps", "eval_blocks"):
            _positive_int(self, field)
        if not self.lr > 0:
            raise ValueError(f"WikitextConfig.lr={self.lr!r} must be positive")

    @property
    def id(self) -> str:
        return f"{self.model_name}-wikitext-{self.strategy}-mb{self.micro_batch}-s{self.seq_len}-{self.steps}steps"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "wikitext", **dataclasses.asdict(self)}


def from_json(data: dict[str, Any]) -> ThroughputConfig | WikitextConfig:
    """The config a worker received (the inverse of ``to_json``)."""
    data = dict(data)
    kind = data.pop("kind", None)
    classes = {"throughput": ThroughputConfig, "wikitext": WikitextConfig}
    if kind not in classes:
        raise ValueError(f"config kind={kind!r} is unknown; use one of {sorted(classes)}")
    return classes[kind](**data)


#: Per scale: (micro-batch, sequence length, steps, warm-up steps, precision). ``tiny`` runs on 2 CPU cores in
#: seconds; ``small`` makes model states dominate memory; ``full`` is the paper's sizes on accelerators
#: (bf16 autocast).
SCALE_SETTINGS = {
    "tiny": (2, 128, 15, 3, "fp32"),
    "small": (2, 256, 6, 2, "fp32"),
    "full": (1, 2048, 10, 3, "amp"),
}
#: Fine-tuning methods each scale runs by default: LoRA at paper scale (optimum-habana's recipe; full fine-tuning of
#: Gemma-2-27B under DDP needs ~450 GiB per device), both where the models are small.
DEFAULT_METHODS = {"tiny": ("full", "lora"), "small": ("full", "lora"), "full": ("lora",)}
#: The LoRA adapters of the matrix: optimum-habana's recipe (rank 8, alpha 16, dropout 0.05, q/k/v/o).
MATRIX_LORA = LoraSpec()


@dataclass(frozen=True)
class ReferenceConfig:
    """A run set as a vendor's published row was, so that a node's number compares with it like for like (the
    plugin's ``reference`` verdict, :mod:`pytest_genai.reference.claims`). Random weights, as every throughput run:
    its id says so; the published row trained the real model on a real dataset."""

    config: ThroughputConfig
    cards: int  # the row's cards: the run is comparable only at this world size
    row: str  # the publisher's row it mirrors
    settings: str  # where each setting was read

    def world_problem(self, world: int) -> str | None:
        """Why a run at ``world`` ranks cannot be compared with the row (a skip reason), or None."""
        if world == self.cards:
            return None
        return (f"reference config {self.config.id} mirrors {self.row} on {self.cards} card(s); this job has {world} "
                f"ranks: run it with --genai-nproc {self.cards} --genai-nnodes 1 to compare like for like")


#: optimum-habana's single-card LoRA fine-tune of LLaMA-7B (CI test ``test_run_lora_clm_llama-7b_single_card``),
#: as its gaudi2 and gaudi3 settings state it: batch 16 per card, bf16, 100 steps, LoRA rank 8 / alpha 16 /
#: dropout 0.1 on q_proj and v_proj, eager attention (no --use_flash_attention). The sequence length is the
#: script's default (run_lora_clm.py ``max_seq_length`` 512; --dataset_concatenation packs every sample to it),
#: which the row itself leaves unstated. Its samples/s counts all 100 steps (``throughput_warmup_steps`` defaults
#: to 0), compilation included; this run's counts the steps after its warm-up, so it reads a little higher for
#: the same speed. The recipe's --attn_softmax_bf16 is not passed by train/gaudi.py. Gaudi1's row (batch 2) has no
#: config here.
OPTIMUM_HABANA_LLAMA_7B_LORA = ReferenceConfig(
    config=ThroughputConfig(model="llama-7b", scale="full", strategy="ddp", attention="unfused", micro_batch=16,
                            seq_len=512, steps=100, warmup=3, precision="amp",
                            lora=LoraSpec(rank=8, alpha=16, targets=("q_proj", "v_proj"), dropout=0.1)),
    cards=1,
    row="optimum-habana test_run_lora_clm_llama-7b_single_card",
    settings="tests/configs/examples/llama_7b.json (gaudi2, gaudi3: databricks-dolly-15k single_card); "
             "examples/language-modeling/run_lora_clm.py (max_seq_length default 512)",
)
#: The runs with a published counterpart, added to the matrix at ``full`` scale only (never in CI's tiny run).
REFERENCE_CONFIGS = (OPTIMUM_HABANA_LLAMA_7B_LORA,)


def reference_config(cfg: ThroughputConfig) -> ReferenceConfig | None:
    """The reference config ``cfg`` is, or None for a paper-matrix run."""
    return next((r for r in REFERENCE_CONFIGS if r.config == cfg), None)


def benchmark_matrix(scale: str, methods: tuple[str, ...] | None = None) -> list[ThroughputConfig]:
    """The throughput runs of ``benchmarks/test_finetune.py`` at ``scale`` (``--genai-scale``).

    ``methods`` ('full', 'lora'; default :data:`DEFAULT_METHODS` of the scale) says which fine-tuning methods run;
    LoRA runs use :data:`MATRIX_LORA`.
    ``tiny`` (CI) keeps the comparisons the claims need and no more: Gemma-2-27B (the paper's DDP-vs-sharding
    model) under DDP, FSDP and ZeRO-3 (per method), and Llama-3.1-8B under DDP with attention fused and unfused
    (full fine-tuning; LoRA when only LoRA runs).
    ``small`` and ``full`` run every paper model under DDP, ZeRO-2, FSDP and ZeRO-3 with attention fused and
    unfused (Gemma-2 has no SDPA path in transformers, so its fused runs exist only on Gaudi), per method.
    ``full`` adds :data:`REFERENCE_CONFIGS` (those of a chosen method): runs set as a vendor's published row.
    """
    if scale not in SCALE_SETTINGS:
        raise ValueError(f"scale={scale!r} is unknown; use one of {sorted(SCALE_SETTINGS)} (--genai-scale)")
    if methods is None:
        methods = DEFAULT_METHODS[scale]
    elif not methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods={methods!r}: use a subset of {', '.join(METHODS)} (--genai-finetune-methods)")
    methods = tuple(dict.fromkeys(methods))
    mb, seq, steps, warmup, precision = SCALE_SETTINGS[scale]

    def cfg(model: str, strategy: str, attention: str, method: str) -> ThroughputConfig:
        return ThroughputConfig(model=model, scale=scale, strategy=strategy, attention=attention, micro_batch=mb,
                                seq_len=seq, steps=steps, warmup=warmup, precision=precision,
                                lora=MATRIX_LORA if method == "lora" else None)

    reference = [r.config for r in REFERENCE_CONFIGS if scale == "full" and r.config.method in methods]
    if scale == "tiny":
        sharding = [cfg("gemma-2-27b", s, "unfused", m) for m in methods for s in ("ddp", "fsdp", "zero3")]
        return sharding + [cfg("llama-3.1-8b", "ddp", a, methods[0]) for a in ATTENTION_MODES]
    # Baselines come first (DDP before the sharded strategies, unfused before fused): a baseline's own row fails
    # before the comparisons that launch it again.
    return [cfg(m, s, a, meth) for meth in methods for m in PAPER_ARCHS for a in ATTENTION_MODES
            for s in ("ddp", "zero2", "fsdp", "zero3")] + reference
