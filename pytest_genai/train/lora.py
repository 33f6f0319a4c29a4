"""LoRA fine-tuning as optimum-habana's ``run_lora_clm.py`` runs it: a frozen dataclass and its ``peft`` config.

optimum-habana (``examples/language-modeling/run_lora_clm.py``, read at commit 1d8504c) builds
``peft.LoraConfig(r=lora_rank, lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=...,
bias="none", task_type=TaskType.CAUSAL_LM)``, wraps the bf16 model with ``get_peft_model`` and, under ``--bf16``,
casts the whole PEFT model (adapters too) to bf16. Its defaults are rank 8, alpha 16, dropout 0.05; its README's
Llama-3.1-8B (Ulysses) and Llama-70B LoRA recipes target ``q_proj k_proj v_proj o_proj``, which is the default
here. Everything but :func:`apply_lora` (and the context it runs peft in) is pure (no torch or peft import).

Base-weight dtype per device (:func:`base_dtype_for`): bf16 on CUDA and Gaudi (as the recipe), fp32 on the CPU:
bf16 matmuls on this suite's CPUs run without AMX/AVX512-BF16 and cost more than fp32, and fp32 keeps the CPU
runs exactly comparable with a single process. Adapters follow peft (fp32, ``autocast_adapter_dtype``) except
on Gaudi, where the recipe casts them to bf16 too. Runs record both dtypes (``base_dtype``, ``adapter_dtype``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

#: The decoder's linear layers by name (Llama and Gemma-2 share them); attention first, then MLP.
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DTYPES = ("float32", "bfloat16")


@dataclass(frozen=True)
class LoraSpec:
    """What ``peft.LoraConfig`` receives: rank ``r``, ``alpha`` (the update is scaled by ``alpha / r``), target
    modules and dropout on the adapters' input. Defaults: optimum-habana's ``run_lora_clm.py`` recipe."""

    rank: int = 8
    alpha: int = 16
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    dropout: float = 0.05

    def __post_init__(self) -> None:
        for field in ("rank", "alpha"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"LoraSpec.{field}={value!r} must be a positive int")
        if isinstance(self.targets, list):  # JSON brings lists back
            object.__setattr__(self, "targets", tuple(self.targets))
        bad = [t for t in self.targets if t not in LINEAR_MODULES]
        if not self.targets or bad or len(set(self.targets)) != len(self.targets):
            raise ValueError(f"LoraSpec.targets={self.targets!r} must be distinct names from {LINEAR_MODULES}")
        if not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ValueError(f"LoraSpec.dropout={self.dropout!r} must be in [0, 1)")

    @property
    def id(self) -> str:
        short = "".join(t[0] if t.endswith("_proj") and t[0] in "qkvo" else t[:2] for t in self.targets)
        return f"lora_r{self.rank}a{self.alpha}_{short}_d{self.dropout:g}"

    def peft_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``peft.LoraConfig``, exactly as ``run_lora_clm.py`` passes them."""
        return {"r": self.rank, "lora_alpha": self.alpha, "lora_dropout": float(self.dropout),
                "target_modules": list(self.targets), "bias": "none", "task_type": "CAUSAL_LM"}

    def planner_kwargs(self) -> dict[str, Any]:
        """The fit planner's ``Workload`` fields for these adapters."""
        return {"method": "lora", "lora_rank": self.rank, "lora_targets": self.targets, "lora_dropout": self.dropout > 0}

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "targets": list(self.targets)}


def base_dtype_for(device_kind: str) -> str:
    """The frozen base weights' dtype on ``device_kind``: bf16 on cuda/hpu (the recipe), fp32 on the CPU."""
    return "float32" if device_kind == "cpu" else "bfloat16"


def run_precision(precision: str, lora: bool, device_kind: str) -> str:
    """The precision a throughput run computes in on ``device_kind`` (the planner's preset and the peak MFU is
    judged against): Gaudi's trainer always runs bf16 autocast (``train/gaudi.py``: ``bf16=True``), and a LoRA base
    is bf16 on accelerators (:func:`base_dtype_for`), so those runs are ``amp`` whatever the config's ``precision``
    says; otherwise the config's."""
    if device_kind == "hpu" or (lora and base_dtype_for(device_kind) == "bfloat16"):
        return "amp"
    return precision


def adapter_dtype_for(device_kind: str) -> str:
    """The adapters' dtype: bf16 on Gaudi (``run_lora_clm.py`` casts the PEFT model under --bf16), else fp32
    (peft keeps adapters in fp32 by default)."""
    return "bfloat16" if device_kind == "hpu" else "float32"


def apply_lora(model: Any, spec: LoraSpec, base_dtype: str = "float32", adapter_dtype: str = "float32") -> Any:
    """``model`` cast to ``base_dtype``, wrapped with ``peft.get_peft_model``: base frozen, adapters trainable in
    ``adapter_dtype``. Needs ``peft`` (``pip install 'pytest-genai[lora]'``)."""
    for name, value in (("base_dtype", base_dtype), ("adapter_dtype", adapter_dtype)):
        if value not in DTYPES:
            raise ValueError(f"{name}={value!r} is unknown; use one of {DTYPES}")
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise RuntimeError(f"LoRA needs the peft package ({exc}): pip install 'pytest-genai[lora]'") from None
    import torch

    base = getattr(torch, base_dtype)
    model = model.to(base)
    for p in model.parameters():
        _cast_shard(p, base)
    with _inc_probe_only_if_loaded():
        peft_model = get_peft_model(model, LoraConfig(**spec.peft_kwargs()))
    wanted = getattr(torch, adapter_dtype)
    for p in peft_model.parameters():
        if p.requires_grad and p.dtype != wanted:
            p.data = p.data.to(wanted)
        if p.requires_grad:
            _cast_shard(p, wanted)
    return peft_model


def _cast_shard(p: Any, dtype: Any) -> None:
    """A parameter partitioned by DeepSpeed ZeRO-3 (built under ``zero.Init``) keeps its values in ``p.ds_tensor``
    and an empty ``p.data``; ``.to(dtype)`` casts only the empty tensor, and every gather rebuilds the weight in the
    shard's dtype. So a deferred ZeRO-3 LoRA build ran its frozen base in fp32 while recording bf16 (seen on the CPU
    with DeepSpeed 0.19: gathered weights fp32 after ``model.to(bfloat16)``). The shard is cast too."""
    shard = getattr(p, "ds_tensor", None)
    if shard is not None and shard.dtype != dtype:
        shard.data = shard.data.to(dtype)


#: The module that defines INC FP8's ``PatchedLinear`` (what peft's ``dispatch_inc`` looks for).
INC_PATCHED_LINEAR_MODULE = "neural_compressor.torch.algorithms.fp8_quant._quant_common.helper_modules"


@contextlib.contextmanager
def _inc_probe_only_if_loaded():
    """peft's LoRA dispatch asks, for each target layer, whether it is INC FP8's ``PatchedLinear``, importing INC
    to ask whenever neural-compressor is installed: over a second per process (INC's import also runs py-cpuinfo in
    a subprocess), in every rank of every LoRA job. A layer can only be a ``PatchedLinear`` once the module defining
    it is imported (INC's FP8 conversion, Gaudi), so while it is not, the answer is "no" without the import; when
    it is, peft asks as usual."""
    try:
        from peft.tuners.lora import inc
    except ImportError:  # another peft layout: leave it alone
        inc = None
    if inc is None or INC_PATCHED_LINEAR_MODULE in sys.modules or not callable(getattr(inc, "is_inc_available", None)):
        yield
        return
    original = inc.is_inc_available
    inc.is_inc_available = lambda: False
    try:
        yield
    finally:
        inc.is_inc_available = original
