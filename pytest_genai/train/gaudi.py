"""The Gaudi (HPU) path: the same runs through optimum-habana's ``GaudiTrainer`` / ``GaudiTrainingArguments``.

Used by the worker when the device is ``hpu``; it needs ``habana_frameworks`` (the Gaudi software stack) and
``optimum-habana`` (``pip install pytest-genai[hpu]``), which cannot be imported elsewhere. Paper A fine-tuned
on Gaudi this way. Strategy mapping: DDP is the trainer's default under torchrun (``ddp_backend='hccl'``),
DeepSpeed ZeRO-2/3 through ``deepspeed=<config>``, FSDP through ``fsdp='full_shard'``. Flash Attention on/off
is Habana's fused SDPA, switched by ``model.generation_config.use_flash_attention`` (with the causal mask),
as optimum-habana's language-modeling examples do.

This module was written against optimum-habana's documented API and has not run on this project's machines
(no Gaudi here). It writes the same result JSON as :mod:`pytest_genai.train.worker`.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from pytest_genai.train.config import ThroughputConfig, WikitextConfig


def _require_habana() -> None:
    import importlib.util

    for module, fix in (("habana_frameworks", "run on a Gaudi node with the Intel Gaudi software stack"),
                        ("optimum.habana", "pip install 'pytest-genai[hpu]'")):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise RuntimeError(f"the hpu path needs {module}: {fix}")


def training_arguments(cfg: ThroughputConfig, output_dir: str) -> dict[str, Any]:
    """Keyword arguments for ``GaudiTrainingArguments`` for one throughput run (pure; tested without Gaudi)."""
    from pytest_genai.runtime.procgroup import backend_for
    from pytest_genai.train.strategies import zero_buckets
    from pytest_genai.train.archs import get_arch

    kwargs: dict[str, Any] = {
        "output_dir": output_dir,
        "use_habana": True,
        "use_lazy_mode": True,
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
        kwargs["fsdp"] = "full_shard"
        kwargs["fsdp_config"] = {"transformer_layer_cls_to_wrap": [
            "Gemma2DecoderLayer" if cfg.model.startswith("gemma") else "LlamaDecoderLayer"]}
    return kwargs


def run_gaudi(cfg: ThroughputConfig | WikitextConfig, env: dict[str, int]) -> int:
    """Train ``cfg`` with ``GaudiTrainer`` on this rank; rank 0 writes the result JSON. Returns an exit code."""
    _require_habana()
    if not isinstance(cfg, ThroughputConfig):
        raise RuntimeError("the hpu path runs throughput configurations; the WikiText fine-tune runs on cpu/cuda")
    import habana_frameworks.torch.core as htcore  # noqa: F401  (registers the hpu device)
    import habana_frameworks.torch.hpu as hthpu
    import torch
    import torch.distributed as dist
    from optimum.habana import GaudiConfig, GaudiTrainer, GaudiTrainingArguments
    from optimum.habana.transformers.modeling_utils import adapt_transformers_to_gaudi
    from transformers import TrainerCallback

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.runtime.rank import finish
    from pytest_genai.train.job import SCHEMA, synthetic_batch

    adapt_transformers_to_gaudi()
    arch = get_arch(cfg.model, cfg.scale)
    model = build_model(arch, "eager", seed=cfg.seed)
    fused = cfg.attention == "fused"
    model.generation_config.use_flash_attention = fused
    model.generation_config.flash_attention_causal_mask = fused

    class Synthetic(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return cfg.steps * cfg.micro_batch * env["world_size"]

        def __getitem__(self, i: int) -> dict[str, Any]:
            ids = synthetic_batch(cfg.seed, i, 0, 1, cfg.seq_len, arch.vocab)[0]
            return {"input_ids": ids, "labels": ids}

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
    with tempfile.TemporaryDirectory() as out:
        args = GaudiTrainingArguments(**training_arguments(cfg, out))
        trainer = GaudiTrainer(model=model, args=args, train_dataset=Synthetic(), callbacks=[clock],
                               gaudi_config=GaudiConfig(use_fused_adam=True, use_fused_clip_norm=True,
                                                        use_torch_autocast=True))
        trainer.train()
    local = {
        "step_s": clock.step_s,
        "peak_memory_bytes": int(hthpu.max_memory_allocated()),
        "memory_measure": "allocator_peak",
        "attention_impl": "habana-fused-sdpa" if fused else "habana-eager",
        "params": arch.param_count(),
    }
    gathered: list[Any] = [None] * env["world_size"]
    dist.all_gather_object(gathered, local)
    finish({
        "schema": SCHEMA, "config": cfg.to_json(), "device": "hpu", "world_size": env["world_size"],
        "losses": clock.losses, "ranks": gathered,
    } if env["rank"] == 0 else None)
