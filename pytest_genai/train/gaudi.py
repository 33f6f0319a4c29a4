"""The Gaudi (HPU) path: the same runs through optimum-habana's ``GaudiTrainer`` / ``GaudiTrainingArguments``.

Used by the worker when the device is ``hpu``; it needs ``habana_frameworks`` (the Gaudi software stack) and
``optimum-habana`` (``pip install -c ci/constraints-gaudi.txt -e ".[hpu]"`` in a checkout), which cannot be imported
elsewhere. Paper A fine-tuned on Gaudi this way. Strategy mapping: DDP is the trainer's default under torchrun
(``ddp_backend='hccl'``), DeepSpeed ZeRO-2/3 through ``deepspeed=<config>``, FSDP through ``fsdp='full_shard'``.
Flash Attention on/off is Habana's fused SDPA, switched by ``model.generation_config.use_flash_attention`` (with
the causal mask), as optimum-habana's language-modeling examples do -- but the trainer forwards those flags to the
model only for some model types (:func:`flash_attention_route`); for Gemma-2 the batches carry them instead. LoRA
runs build the adapters as ``run_lora_clm.py`` does (:mod:`pytest_genai.train.lora`): bf16 base, PEFT model cast to
bf16.

This module was written against optimum-habana's documented API; it has not run on a Gaudi card. CI runs it
through ``GaudiTrainer`` on the CPU with a stand-in bridge (scripts/gaudi_leg.sh, tests/gaudi_leg). It writes the
same result JSON as :mod:`pytest_genai.train.worker`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from typing import Any

from pytest_genai.devices.device import HPU_EXTRA_INSTALL
from pytest_genai.train.config import ThroughputConfig, WikitextConfig

#: Model types for which ``GaudiTrainer`` adds ``use_flash_attention`` / ``flash_attention_causal_mask`` (from
#: ``model.generation_config``) to every batch: ``_get_input_update_settings`` in optimum-habana's
#: ``optimum/habana/transformers/trainer.py`` (read at commit 1d8504c).
TRAINER_FORWARDS_FLASH = ("llama", "qwen2", "starcoder2", "gemma", "baichuan", "chatglm", "deepseek_v2")
#: Model types the trainer leaves out whose Gaudi ``ForCausalLM.forward`` takes the same keyword arguments
#: (``GaudiGemma2ForCausalLM.forward(..., use_flash_attention=False, flash_attention_causal_mask=False)`` in
#: ``models/gemma2/modeling_gemma2.py``, same commit): the batches carry the flags.
FORWARD_TAKES_FLASH = ("gemma2",)
#: What differs numerically when Flash Attention is on, per model type (said in the run's labels).
FLASH_CAVEATS = {"gemma2": "Habana FusedSDPA path skips Gemma-2's attention-logit soft-capping (the eager path "
                           "applies it), so fused and unfused runs compute slightly different attention"}


@dataclass(frozen=True)
class FlashRoute:
    """How a Gaudi run switches Flash Attention for a model type: ``trainer`` (generation_config flags the
    trainer forwards), ``batch`` (the flags ride in every batch), or ``not_applicable`` (no verified switch;
    ``reason`` says why)."""

    model_type: str
    how: str
    reason: str


def flash_attention_route(model_type: str) -> FlashRoute:
    """Decide how Flash Attention on/off really reaches ``model_type``'s attention on Gaudi (pure)."""
    if model_type in TRAINER_FORWARDS_FLASH:
        return FlashRoute(model_type, "trainer", "GaudiTrainer forwards generation_config.use_flash_attention")
    if model_type in FORWARD_TAKES_FLASH:
        return FlashRoute(model_type, "batch", "GaudiTrainer does not forward the flag for this model type; its "
                                               "Gaudi forward takes use_flash_attention, so every batch carries it")
    return FlashRoute(model_type, "not_applicable",
                      f"optimum-habana forwards use_flash_attention only for {', '.join(TRAINER_FORWARDS_FLASH)} "
                      f"and {model_type!r} has no verified forward flag: fused and unfused runs would be the same")


def flash_batch_flags(model_type: str, fused: bool) -> dict[str, bool]:
    """Keyword arguments every batch must carry so that Flash Attention is on (``fused``) or off for real:
    empty where the trainer forwards ``generation_config``'s flags itself."""
    route = flash_attention_route(model_type)
    if route.how == "not_applicable" and fused:
        raise ValueError(f"attention='fused' on Gaudi for {model_type}: {route.reason}")
    if route.how != "batch":
        return {}
    return {"use_flash_attention": fused, "flash_attention_causal_mask": fused}


def _require_habana() -> None:
    import importlib.util

    for module, fix in (("habana_frameworks", "run on a Gaudi node with the Intel Gaudi software stack"),
                        ("optimum.habana", HPU_EXTRA_INSTALL)):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise RuntimeError(f"the hpu path needs {module}: {fix}")


#: The Gaudi decoder-layer classes that ``adapt_transformers_to_gaudi`` puts in place of transformers' own, per model
#: type (optimum-habana ``transformers/modeling_utils.py``: ``LlamaDecoderLayer = GaudiLlamaDecoderLayer``,
#: ``Gemma2DecoderLayer = GaudiGemma2DecoderLayer``; commit 1d8504c). FSDP's transformer-based auto-wrap matches
#: class *names*, so the upstream names wrap nothing on Gaudi; optimum-habana's own ``fsdp_config.json`` names
#: ``GaudiLlamaDecoderLayer``.
GAUDI_DECODER_LAYERS = {"llama": "GaudiLlamaDecoderLayer", "gemma2": "GaudiGemma2DecoderLayer"}


def hpu_mode_for(cfg: ThroughputConfig) -> str:
    """The Gaudi execution mode a run of ``cfg`` uses: FSDP runs eagerly, as optimum-habana runs FSDP
    (``PT_HPU_LAZY_MODE=0`` and ``--use_lazy_mode False`` in its language-modeling README's FSDP example); DDP and
    DeepSpeed runs in lazy mode, the mode Paper A's Gaudi runs used."""
    return "eager" if cfg.strategy == "fsdp" else "lazy"


def fsdp_layer_class(model_type: str) -> str:
    """The decoder-layer class name FSDP wraps one unit per layer of, on Gaudi; ValueError for an unknown type."""
    try:
        return GAUDI_DECODER_LAYERS[model_type]
    except KeyError:
        raise ValueError(f"FSDP on Gaudi: no Gaudi decoder-layer class known for model type {model_type!r} "
                         f"(known: {', '.join(sorted(GAUDI_DECODER_LAYERS))}); the whole model would be one "
                         "FSDP unit") from None


def training_arguments(cfg: ThroughputConfig, output_dir: str) -> dict[str, Any]:
    """Keyword arguments for ``GaudiTrainingArguments`` for one throughput run (pure; tested without Gaudi)."""
    from pytest_genai.runtime.procgroup import backend_for
    from pytest_genai.train.strategies import zero_buckets
    from pytest_genai.train.archs import get_arch

    kwargs: dict[str, Any] = {
        "output_dir": output_dir,
        "use_habana": True,
        "use_lazy_mode": hpu_mode_for(cfg) == "lazy",
        "bf16": True,
        "per_device_train_batch_size": cfg.micro_batch,
        "max_steps": cfg.steps,
        "learning_rate": cfg.lr,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "throughput_warmup_steps": cfg.warmup,
        "ddp_backend": backend_for("hpu"),
        "seed": cfg.seed,
        "dataloader_drop_last": True,
    }
    if cfg.strategy in ("zero2", "zero3"):
        stage = int(cfg.strategy[-1])
        kwargs["deepspeed"] = {
            "train_micro_batch_size_per_gpu": cfg.micro_batch,
            "gradient_accumulation_steps": 1,
            "bf16": {"enabled": True},
            "zero_optimization": {"stage": stage, **zero_buckets(get_arch(cfg.model, cfg.scale).hidden, stage)},
        }
    elif cfg.strategy == "fsdp":
        # one FSDP unit per decoder layer (auto_wrap), with the settings of optimum-habana's fsdp_config.json
        kwargs["fsdp"] = "full_shard auto_wrap"
        layer_cls = fsdp_layer_class(get_arch(cfg.model, cfg.scale).family)
        kwargs["fsdp_config"] = {"transformer_layer_cls_to_wrap": [layer_cls],
                                 "backward_prefetch": "backward_pre", "forward_prefetch": False,
                                 "sync_module_states": True, "use_orig_params": True}
    return kwargs


def gaudi_config_kwargs(mode: str) -> dict[str, bool]:
    """``GaudiConfig`` settings for ``mode``: Habana's fused AdamW and clip-norm only in lazy mode
    (``habana_frameworks.torch.hpex.optimizers`` raises ImportError "not yet supported in eager mode")."""
    lazy = mode == "lazy"
    return {"use_fused_adam": lazy, "use_fused_clip_norm": lazy, "use_torch_autocast": True}


def arguments_then_model(cfg: ThroughputConfig, output_dir: str) -> tuple[Any, Any]:
    """``(GaudiTrainingArguments, model)`` for ``cfg``, in that order: with a ZeRO-3 config the arguments make
    transformers build the model under ``deepspeed.zero.Init`` (each parameter partitioned as it is created), so no
    rank holds the whole fp32 model; built first, every rank would, and DeepSpeed would then move it whole to one
    card. The decoder layers are optimum-habana's (``adapt_transformers_to_gaudi`` runs first)."""
    from optimum.habana import GaudiTrainingArguments
    from optimum.habana.transformers.modeling_utils import adapt_transformers_to_gaudi

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model

    adapt_transformers_to_gaudi()
    args = GaudiTrainingArguments(**training_arguments(cfg, output_dir))
    return args, build_model(get_arch(cfg.model, cfg.scale), "eager", seed=cfg.seed)


def run_gaudi(cfg: ThroughputConfig | WikitextConfig, env: dict[str, int]) -> int:
    """Train ``cfg`` with ``GaudiTrainer`` on this rank; rank 0 writes the result JSON. Returns an exit code."""
    _require_habana()
    if not isinstance(cfg, ThroughputConfig):
        raise RuntimeError("the hpu path runs throughput configurations; the WikiText fine-tune runs on cpu/cuda")
    import habana_frameworks.torch.core as htcore  # noqa: F401  (registers the hpu device)
    import habana_frameworks.torch.hpu as hthpu
    import torch
    import torch.distributed as dist
    from optimum.habana import GaudiConfig, GaudiTrainer
    from transformers import TrainerCallback

    from pytest_genai.train.archs import get_arch
    from pytest_genai.runtime.rank import finish
    from pytest_genai.train.job import SCHEMA, synthetic_batch

    from pytest_genai.runtime.hpu_mode import require_mode

    hpu_mode = require_mode(hpu_mode_for(cfg))  # before any step: one mode's numbers never carry the other's name
    arch = get_arch(cfg.model, cfg.scale)
    out_dir = tempfile.TemporaryDirectory()  # the trainer's output_dir (nothing is saved in it)
    args, model = arguments_then_model(cfg, out_dir.name)
    if cfg.strategy == "fsdp":  # the wrap matches class names: refuse a model in which it would find no layer
        layer_cls = fsdp_layer_class(model.config.model_type)
        if not any(type(m).__name__ == layer_cls for m in model.modules()):
            raise RuntimeError(f"FSDP on Gaudi would wrap {layer_cls} layers, and the model has none (was "
                               "adapt_transformers_to_gaudi applied before the model was built?)")
    fused = cfg.attention == "fused"
    model_type = model.config.model_type
    route = flash_attention_route(model_type)
    batch_flags = flash_batch_flags(model_type, fused)  # raises for fused on a model with no verified switch
    model.generation_config.use_flash_attention = fused
    model.generation_config.flash_attention_causal_mask = fused
    dtypes = {"base_dtype": "float32", "adapter_dtype": None}
    if cfg.lora is not None:  # as run_lora_clm.py: bf16 base, get_peft_model, the PEFT model cast to bf16
        from pytest_genai.train.lora import adapter_dtype_for, apply_lora, base_dtype_for

        dtypes = {"base_dtype": base_dtype_for("hpu"), "adapter_dtype": adapter_dtype_for("hpu")}
        model = apply_lora(model, cfg.lora, **dtypes)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)

    class Synthetic(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return cfg.steps * cfg.micro_batch * env["world_size"]

        def __getitem__(self, i: int) -> dict[str, Any]:
            ids = synthetic_batch(cfg.seed, i, 0, 1, cfg.seq_len, arch.vocab)[0]
            return {"input_ids": ids, "labels": ids}

    def collate(items: list[dict[str, Any]]) -> dict[str, Any]:
        batch = {k: torch.stack([item[k] for item in items]) for k in ("input_ids", "labels")}
        return {**batch, **batch_flags}  # Gemma-2: the Flash Attention flags the trainer does not forward

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.step_s: list[float] = []
            self.losses: list[float] = []
            self._t0 = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            hthpu.synchronize()
            self._t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            hthpu.synchronize()
            self.step_s.append(time.perf_counter() - self._t0)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    clock = StepClock()
    hthpu.reset_peak_memory_stats()
    try:
        trainer = GaudiTrainer(model=model, args=args, train_dataset=Synthetic(), callbacks=[clock],
                               data_collator=collate,
                               gaudi_config=GaudiConfig(**gaudi_config_kwargs(hpu_mode)))
        trainer.train()
    finally:
        out_dir.cleanup()
    local = {
        "step_s": clock.step_s,
        "peak_memory_bytes": int(hthpu.max_memory_allocated()),
        "memory_measure": "allocator_peak",
        "attention_impl": "habana-fused-sdpa" if fused else "habana-eager",
        "flash_attention_route": route.how,
        "flash_attention_caveat": FLASH_CAVEATS.get(model_type, "") if fused else "",
        "params": arch.param_count(),
        "trainable_params": int(trainable),
        "method": cfg.method,
        "hpu_mode": hpu_mode,
        **dtypes,
    }
    gathered: list[Any] = [None] * env["world_size"]
    dist.all_gather_object(gathered, local)
    finish({
        "schema": SCHEMA, "config": cfg.to_json(), "device": "hpu", "world_size": env["world_size"],
        "losses": clock.losses, "ranks": gathered,
    } if env["rank"] == 0 else None)
