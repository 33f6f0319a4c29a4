"""Data-parallel training strategies behind one interface: DDP, FSDP (FSDP2 ``fully_shard``), DeepSpeed ZeRO-2/3.

Each strategy wraps a model and a ``torch.optim.AdamW`` and returns a :class:`Trainer` whose ``step(input_ids)``
runs forward, backward and the optimizer step for a causal-LM loss on this rank's micro-batch. Gradients are
averaged over ranks by every strategy, so all of them follow the single-process trajectory on the global batch
(tested).

- DDP: ``gradient_as_bucket_view=True`` (gradients live in the all-reduce buckets, no second copy).
- FSDP: each decoder layer is its own unit, then the root (embeddings, final norm, LM head); full sharding.
- DeepSpeed: the given ``torch.optim`` optimizer, fp32 (autocast supplies bf16 compute under ``precision='amp'``).
  On the CPU its shared-memory communication op is disabled before ``initialize``: building it compiles C++
  on first use, while gloo needs no build.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

STRATEGIES = ("ddp", "fsdp", "zero2", "zero3")


@dataclass(frozen=True)
class Context:
    """Where and how a rank trains."""

    device_kind: str  # cpu | cuda
    local_rank: int
    precision: str = "fp32"  # fp32 | amp (bf16 autocast, fp32 weights)
    lr: float = 1e-3

    @property
    def torch_device(self):
        import torch

        return torch.device("cpu") if self.device_kind == "cpu" else torch.device(self.device_kind, self.local_rank)

    def autocast(self):
        if self.precision != "amp":
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type=self.device_kind, dtype=torch.bfloat16)


def decoder_layers(model: Any) -> list[Any]:
    """The decoder layers of a transformers causal LM (``model.model.layers``; under peft, of its base model)."""
    if hasattr(model, "get_base_model"):
        model = model.get_base_model()
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__} has no model.layers; FSDP needs the decoder layers to shard")
    return list(layers)


def _optimizer(params, lr: float):
    import torch

    # Only what trains (LoRA: the adapters; the frozen base gets no optimizer state).
    # fused: one kernel per step and no temporaries, so the planner's optimizer-step memory is exact.
    return torch.optim.AdamW([p for p in params if p.requires_grad], lr=lr, betas=(0.9, 0.95), weight_decay=0.0,
                             fused=True)


class Trainer(ABC):
    """A wrapped model that trains on this rank's micro-batch."""

    name: str

    def __init__(self, ctx: Context):
        self.ctx = ctx

    @abstractmethod
    def step(self, input_ids) -> Any:
        """One optimizer step on ``input_ids`` (labels = inputs); returns the detached local loss."""

    @abstractmethod
    def forward_loss(self, input_ids) -> Any:
        """The causal-LM loss on ``input_ids`` without gradients (for held-out evaluation)."""


class _TorchTrainer(Trainer):
    """DDP and FSDP: a module called directly, a torch optimizer stepped by hand."""

    def __init__(self, ctx: Context, module: Any, optimizer: Any):
        super().__init__(ctx)
        self.module = module
        self.optimizer = optimizer

    def step(self, input_ids):
        with self.ctx.autocast():
            loss = self.module(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def forward_loss(self, input_ids):
        import torch

        with torch.no_grad(), self.ctx.autocast():
            return self.module(input_ids=input_ids, labels=input_ids).loss.detach()


class DDPTrainer(_TorchTrainer):
    name = "ddp"

    @classmethod
    def wrap(cls, model: Any, ctx: Context) -> "DDPTrainer":
        from torch.nn.parallel import DistributedDataParallel

        model = model.to(ctx.torch_device)
        ids = [ctx.local_rank] if ctx.device_kind == "cuda" else None
        ddp = DistributedDataParallel(model, device_ids=ids, gradient_as_bucket_view=True)
        return cls(ctx, ddp, _optimizer(ddp.parameters(), ctx.lr))


class FSDPTrainer(_TorchTrainer):
    name = "fsdp"

    @classmethod
    def wrap(cls, model: Any, ctx: Context) -> "FSDPTrainer":
        from torch.distributed.fsdp import fully_shard

        model = model.to(ctx.torch_device)
        for layer in decoder_layers(model):
            fully_shard(layer)
        fully_shard(model)
        return cls(ctx, model, _optimizer(model.parameters(), ctx.lr))


def zero_buckets(hidden: int, stage: int) -> dict[str, int]:
    """Bucket sizes (elements) as transformers' DeepSpeed integration sets them for ``"auto"``.

    DeepSpeed's own defaults (5e8-element buckets, 2 GB in fp32) are sized for large models and would
    dominate the memory of the scaled ones.
    """
    buckets = {"reduce_bucket_size": hidden * hidden, "allgather_bucket_size": hidden * hidden}
    if stage == 3:
        buckets["stage3_prefetch_bucket_size"] = int(0.9 * hidden * hidden)
        buckets["stage3_param_persistence_threshold"] = 10 * hidden
    return buckets


class DeepSpeedTrainer(Trainer):
    """DeepSpeed ZeRO stage 2 or 3 through ``deepspeed.initialize``."""

    def __init__(self, ctx: Context, engine: Any, stage: int):
        super().__init__(ctx)
        self.engine = engine
        self.name = f"zero{stage}"

    @staticmethod
    def config(hidden: int | None, stage: int, micro_batch: int, ctx: Context) -> dict[str, Any]:
        """DeepSpeed's config; ``hidden=None`` (a model not built yet) keeps DeepSpeed's own bucket sizes."""
        import deepspeed.ops

        if ctx.device_kind == "cpu":
            deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
        return {
            "train_micro_batch_size_per_gpu": micro_batch,
            "gradient_accumulation_steps": 1,
            "zero_optimization": {"stage": stage, **({} if hidden is None else zero_buckets(hidden, stage))},
            "steps_per_print": 2**31 - 1,
            "wall_clock_breakdown": False,
        }

    @classmethod
    def start(cls, model: Any, ctx: Context, stage: int, config: dict[str, Any]) -> "DeepSpeedTrainer":
        import deepspeed

        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=_optimizer(model.parameters(), ctx.lr),
                                               config=config)
        return cls(ctx, engine, stage)

    @classmethod
    def wrap(cls, model: Any, ctx: Context, stage: int, micro_batch: int) -> "DeepSpeedTrainer":
        config = cls.config(model.config.hidden_size, stage, micro_batch, ctx)
        return cls.start(model.to(ctx.torch_device), ctx, stage, config)

    def step(self, input_ids):
        with self.ctx.autocast():
            loss = self.engine(input_ids=input_ids, labels=input_ids).loss
        self.engine.backward(loss)
        self.engine.step()
        return loss.detach()

    def forward_loss(self, input_ids):
        import torch

        with torch.no_grad(), self.ctx.autocast():
            return self.engine(input_ids=input_ids, labels=input_ids).loss.detach()


#: Strategies whose units can be built already sharded: FSDP (meta device, ``fully_shard``, then each rank's shard
#: materialized on its device) and ZeRO-3 (``deepspeed.zero.Init`` partitions every parameter as it is created).
DEFERRED_STRATEGIES = ("fsdp", "zero3")


def build_and_wrap(strategy: str, build: Any, ctx: Context, micro_batch: int, *, deferred: bool,
                   seed: int = 0, hidden: int | None = None) -> tuple[Trainer, Any]:
    """``(trainer, model)``. ``build(device)`` makes the (possibly LoRA-wrapped) model, ``device=None`` on the host or
    ``"meta"`` without storage. ``deferred``: the sharded strategies build without ever holding the whole fp32
    model in host memory (a 70B model is 280 GB per rank in fp32); the others build it whole, then wrap."""
    if not deferred:
        model = build(None)
        return wrap(strategy, model, ctx, micro_batch), model
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        from pytest_genai.train.build import materialize

        model = build("meta")
        for layer in decoder_layers(model):
            fully_shard(layer)
        fully_shard(model)
        materialize(model, ctx.torch_device, seed)
        return FSDPTrainer(ctx, model, _optimizer(model.parameters(), ctx.lr)), model
    if strategy == "zero3":
        import deepspeed
        # imported before zero.Init patches Tensor.__new__: a first import under the patch (transformers reaches it
        # lazily when the first model class is built) fails torch's own signature check with a TypeError
        import torch._dynamo  # noqa: F401

        config = DeepSpeedTrainer.config(hidden, 3, micro_batch, ctx)
        # each parameter is partitioned as its module is created; transformers' init_weights does not reach the
        # partitioned tensors, so they keep torch's default initialization: random weights either way (throughput
        # does not depend on their values), of another distribution than an eager build's
        with deepspeed.zero.Init(config_dict_or_path=config, remote_device="cpu" if ctx.device_kind == "cpu"
                                 else None):
            model = build(None)
        return DeepSpeedTrainer.start(model, ctx, 3, config), model
    raise ValueError(f"strategy={strategy!r} cannot build deferred; use one of {DEFERRED_STRATEGIES}")


def wrap(strategy: str, model: Any, ctx: Context, micro_batch: int) -> Trainer:
    """Wrap ``model`` for ``strategy`` ('ddp', 'fsdp', 'zero2', 'zero3'). Needs an initialized process group."""
    if strategy == "ddp":
        return DDPTrainer.wrap(model, ctx)
    if strategy == "fsdp":
        return FSDPTrainer.wrap(model, ctx)
    if strategy in ("zero2", "zero3"):
        return DeepSpeedTrainer.wrap(model, ctx, stage=int(strategy[-1]), micro_batch=micro_batch)
    raise ValueError(f"strategy={strategy!r} is unknown; use one of {STRATEGIES}")
