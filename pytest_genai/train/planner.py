"""Fit planner: per-device memory of each parallel strategy, and DDP whenever it fits (Paper A, A2, as a tool).

Paper A's conclusion for fine-tuning on Gaudi: sharding (DeepSpeed ZeRO-3, FSDP) saves memory but costs
throughput, so use it only when the model does not fit one card. The planner predicts each strategy's
per-device memory and recommends the first that fits in the order DDP, ZeRO-2, FSDP, ZeRO-3.

Model states (ZeRO paper, Rajbhandari et al. 2020, sec. 3.1), per parameter:

- ``fp32``: fp32 weights (4 B) + fp32 gradients (4 B) + Adam moments (8 B) = 16 B;
- ``amp``: the same 16 B (fp32 master weights, bf16 autocast compute); activations are 2-byte but the norms on the
  fp32 residual stream, and autocast's bf16 copy of every weight is held until its backward (``transient``);
- ``mixed``: bf16/fp16 weights (2) + gradients (2) + fp32 master copy and Adam moments (12) = 16 B, the ZeRO
  paper's ``K = 12``.

Sharding (``world`` = data-parallel size): DDP replicates everything; ZeRO-2 shards gradients and optimizer
states; FSDP (full shard) and ZeRO-3 shard all three and, while a unit runs, hold its gathered full weights
and gradients (``gathered``: the largest unit's parameters × (weight + gradient bytes), two units in flight
for prefetch). ``method='lora'`` freezes the base weights (no gradients or optimizer states for them, stored in
``frozen_weight`` bytes: bf16 under ``mixed``/``amp``) and trains rank-``r`` adapters on ``lora_targets``
(default q, k, v, o, as optimum-habana's LoRA recipes), whose weights, gradients and AdamW states take the
precision's full 16 B per parameter.

Activations (saved for backward, per token and decoder layer) are an enumeration of the tensors that
transformers' Llama / Gemma-2 layers save, checked exactly against ``torch.autograd.graph.saved_tensors_hooks``
in the tests; the LM head adds the fp32 log-softmax of the logits, and the loss's backward briefly holds
two more logits-sized fp32 buffers (counted as ``transient``).

Everything here is pure arithmetic (no torch). Numbers it returns are *modeled*; benchmarks compare them with
measured peaks (see ``PLANNER_TOLERANCE``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pytest_genai.train.archs import ArchSpec

STRATEGIES = ("ddp", "zero2", "fsdp", "zero3")
SHARDED = ("zero2", "fsdp", "zero3")
METHODS = ("full", "lora")
ATTENTIONS = ("sdpa", "eager", "flash")
#: The decoder's linear layers (as in :mod:`pytest_genai.train.lora`; kept here so the planner stays import-free).
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class Precision:
    """Bytes per parameter of each model state, and per saved activation element."""

    name: str
    weight: int
    grad: int
    optimizer: int
    activation: int
    frozen_weight: int  # bytes of a frozen (LoRA base) weight


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", weight=4, grad=4, optimizer=8, activation=4, frozen_weight=4),
    "amp": Precision("amp", weight=4, grad=4, optimizer=8, activation=2, frozen_weight=2),
    "mixed": Precision("mixed", weight=2, grad=2, optimizer=12, activation=2, frozen_weight=2),
}

#: |measured / predicted - 1| the benchmarks accept between a strategy's predicted per-rank peak and the
#: measured one (the allocator's peak on CUDA/HPU, live tensor bytes on the CPU; neither counts communication
#: libraries' own buffers). Set from the CPU measurements with 2 ranks in docs/finetune.md.
PLANNER_TOLERANCE = {"ddp": 0.10, "zero2": 0.15, "zero3": 0.15, "fsdp": 0.15}


@dataclass(frozen=True)
class Workload:
    """What is trained, how, and on how many data-parallel ranks."""

    arch: ArchSpec
    world: int
    micro_batch: int = 1
    seq_len: int = 2048
    precision: str = "mixed"
    method: str = "full"
    lora_rank: int = 8
    attention: str = "sdpa"
    lora_targets: tuple[str, ...] = LORA_TARGETS
    lora_dropout: bool = False

    def __post_init__(self) -> None:
        bad = [t for t in self.lora_targets if t not in LINEAR_MODULES]
        if not self.lora_targets or bad:
            raise ValueError(f"Workload.lora_targets={self.lora_targets!r} must name modules from {LINEAR_MODULES}")
        for field in ("world", "micro_batch", "seq_len", "lora_rank"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Workload.{field}={value!r} must be a positive int")
        if self.precision not in PRECISIONS:
            raise ValueError(f"Workload.precision={self.precision!r} is unknown; use one of {sorted(PRECISIONS)}")
        if self.method not in METHODS:
            raise ValueError(f"Workload.method={self.method!r} is unknown; use one of {METHODS}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"Workload.attention={self.attention!r} is unknown; use one of {ATTENTIONS}")

    @property
    def bytes(self) -> Precision:
        return PRECISIONS[self.precision]

    @property
    def tokens(self) -> int:
        """Tokens per rank per micro-batch."""
        return self.micro_batch * self.seq_len


@dataclass(frozen=True)
class MemoryEstimate:
    """Predicted per-device bytes of one strategy (all fields modeled).

    Training memory peaks in one of two phases, and the estimate is the larger:

    - end of forward / start of backward: weights, optimizer states, every saved activation, the logits'
      transient buffers, a sharded strategy's gathered units, and the gradients only where they persist
      between steps (DDP's all-reduce buckets; DeepSpeed's gradient partitions);
    - optimizer step: weights, gradients and optimizer states (the fused AdamW makes no temporaries).
    """

    strategy: str
    weights: int
    grads: int
    optimizer: int
    activations: int
    transient: int
    gathered: int
    grads_persist: bool

    @property
    def model_states(self) -> int:
        return self.weights + self.grads + self.optimizer

    @property
    def forward_peak(self) -> int:
        grads = self.grads if self.grads_persist else 0
        return self.weights + self.optimizer + grads + self.activations + self.transient + self.gathered

    @property
    def step_peak(self) -> int:
        return self.model_states

    @property
    def total(self) -> int:
        return max(self.forward_peak, self.step_peak)

    def as_dict(self) -> dict[str, int | str | bool]:
        return {**dataclasses.asdict(self), "model_states": self.model_states, "total": self.total}


def linear_shapes(arch: ArchSpec) -> dict[str, tuple[int, int]]:
    """(in, out) features of each decoder linear layer."""
    h, q, kv, f = arch.hidden, arch.q_dim, arch.kv_dim, arch.ffn
    return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
            "gate_proj": (h, f), "up_proj": (h, f), "down_proj": (f, h)}


def lora_params(arch: ArchSpec, rank: int, targets: tuple[str, ...] = LORA_TARGETS) -> int:
    """Trainable LoRA parameters: ``r·(in + out)`` (A is r×in, B is out×r) for each target in every layer."""
    shapes = linear_shapes(arch)
    return arch.num_layers * rank * sum(sum(shapes[t]) for t in targets)


def trainable_params(w: Workload) -> int:
    return w.arch.param_count() if w.method == "full" else lora_params(w.arch, w.lora_rank, w.lora_targets)


def lora_saved_activation_bytes_per_token(arch: ArchSpec, seq_len: int, attention: str, act_bytes: int,
                                          rank: int, targets: tuple[str, ...] = LORA_TARGETS,
                                          dropout: bool = False, linear_saves_input: bool = False) -> int:
    """Bytes saved for backward per token when only LoRA adapters train (base weights frozen).

    Against full fine-tuning (:func:`saved_activation_bytes_per_token`): a frozen weight needs no input for its
    gradient, so a base linear saves nothing and an RMSNorm keeps only its input and rstd (``H + 1``, not its
    normalized output); the first layer's input norm saves nothing (the embedding output needs no gradient), nor
    does the LM head save its input. A targeted linear's ``lora_A`` saves its input (q, k, v share one: the
    norm's output) and ``lora_B`` its ``r``-wide input. The MLP keeps gate, up and the activation (``3F``; the
    down projection's input only when ``down_proj`` is targeted). With adapter dropout each targeted module
    keeps its own dropped input and mask (modeled at ``act_bytes``: torch's CPU dropout keeps a mask of the
    input's dtype; CUDA's fused kernel a 1-byte one, so this over-predicts there). The attention core saves what
    it saves under full fine-tuning. Checked against ``saved_tensors_hooks`` with peft in the tests.
    ``linear_saves_input``: DeepSpeed ZeRO-3 replaces torch's linear by its ``LinearFunctionForZeroStage3``,
    which saves every linear's input whether its weight trains or not (seen with ``saved_tensors_hooks``: 3 more
    hidden-sized tensors per layer and the down projection's input), so each linear group's input counts.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention={attention!r} is unknown; use one of {ATTENTIONS}")
    shapes = linear_shapes(arch)
    h, f, q, kv, heads = arch.hidden, arch.ffn, arch.q_dim, arch.kv_dim, arch.num_heads
    elems = arch.norms_per_layer * (h + 1) + 3 * f + rank * len(targets)
    fused = attention in ("sdpa", "flash")
    for group in (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"), ("o_proj",), ("down_proj",)):
        hit = [t for t in group if t in targets]
        width = shapes[group[0]][0]
        if dropout:  # each module's dropped copy and its mask
            elems += 2 * width * len(hit)
        shared_saved = (bool(hit) and not dropout) or linear_saves_input
        if shared_saved and not (fused and group == ("o_proj",)):  # the group's input, once (SDPA saves o's input)
            elems += width
    fp32_elems = 0
    if fused:
        elems += 2 * q + 2 * kv  # q, k, v after RoPE and SDPA's output (the o-projection's input)
        fp32_elems += heads
    else:
        elems += 3 * q
        fp32_elems += heads * seq_len * (2 if arch.family == "gemma2" else 1)
    layer_bytes = elems * act_bytes + fp32_elems * 4
    first_norm = (h + 1) * act_bytes  # layer 0's input norm: its input needs no gradient
    head_bytes = (h + 1) * act_bytes + arch.vocab * 4 * (2 if arch.family == "gemma2" else 1)
    return arch.num_layers * layer_bytes - first_norm + head_bytes


def saved_activation_bytes_per_token(arch: ArchSpec, seq_len: int, attention: str, act_bytes: int,
                                     autocast: bool = False) -> int:
    """Bytes transformers' decoder saves for backward per token (all layers plus the LM head).

    Per layer, in elements of ``act_bytes``: each RMSNorm keeps its input, its normalized output and one rstd
    (``2H + 1``); the q/k/v and gate/up linears keep their (normed) input (``2H``); q and k after RoPE and v;
    the o-projection's input (``q_dim``); the MLP keeps gate, up, activation and product (``4F``).
    SDPA adds its log-sum-exp per head (its output is the o-projection's input). Eager attention instead keeps
    keys and values expanded to every query head and the softmax probabilities (``heads·S``, fp32); Gemma-2's
    logit soft-capping keeps its tanh output too (``heads·S``). The head keeps the final norm, its output,
    and the fp32 log-softmax (``V``; Gemma-2's final soft-capping another ``V``).
    Under ``autocast`` (fp32 weights, bf16 compute: the ``amp`` preset) the residual stream stays fp32, so every
    norm keeps its three tensors in fp32, and each of q, k, v, gate and up saves its own bf16 cast of the normed
    input (``5H`` instead of the shared ``2H``).
    Activation checkpointing and fused-attention memory savings beyond SDPA are not modeled.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention={attention!r} is unknown; use one of {ATTENTIONS}")
    h, f, q, kv, heads = arch.hidden, arch.ffn, arch.q_dim, arch.kv_dim, arch.num_heads
    norm_bytes = 4 if autocast else act_bytes
    linear_inputs = 5 * h if autocast else 2 * h
    elems = linear_inputs + 4 * f + q  # linear inputs, MLP, o_proj input (the norms are added below)
    fp32_elems = 0
    if attention in ("sdpa", "flash"):
        elems += q + 2 * kv
        fp32_elems += heads  # log-sum-exp
    else:
        elems += 3 * q  # q, and k and v expanded to every query head
        fp32_elems += heads * seq_len * (2 if arch.family == "gemma2" else 1)
    layer_bytes = elems * act_bytes + arch.norms_per_layer * (2 * h + 1) * norm_bytes + fp32_elems * 4
    head_bytes = (2 * h + 1) * norm_bytes + h * act_bytes + arch.vocab * 4 * (2 if arch.family == "gemma2" else 1)
    return arch.num_layers * layer_bytes + head_bytes


def _largest_unit_params(arch: ArchSpec) -> int:
    """Parameters of the biggest FSDP / ZeRO-3 unit: a decoder layer, or the root (embeddings, norm, head)."""
    root = arch.param_count() - arch.num_layers * arch.layer_params()
    return max(arch.layer_params(), root)


def estimate(w: Workload, strategy: str) -> MemoryEstimate:
    """Predicted per-device memory of ``strategy`` for workload ``w`` (see the module docstring)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is unknown; use one of {STRATEGIES}")
    b = w.bytes
    total = w.arch.param_count()
    train = trainable_params(w)
    weight_bytes = train * b.weight + (total - train) * b.frozen_weight if w.method == "lora" else total * b.weight
    grads, optim = train * b.grad, train * b.optimizer
    shard_weights = strategy in ("fsdp", "zero3")
    shard_grads = strategy in SHARDED
    world = w.world
    weights = -(-weight_bytes // world) if shard_weights else weight_bytes
    grads = -(-grads // world) if shard_grads else grads
    optim = -(-optim // world) if shard_grads else optim
    gathered = 0
    if shard_weights and world > 1:
        unit = _largest_unit_params(w.arch)
        # the gathered units are the base weights: frozen under LoRA (bf16 under amp), with their gradients in full
        per_param = b.weight + b.grad if w.method == "full" else b.frozen_weight
        gathered = 2 * unit * per_param
    attention = "eager" if w.attention == "eager" else "sdpa"
    if w.method == "lora":
        per_token = lora_saved_activation_bytes_per_token(w.arch, w.seq_len, attention, b.activation, w.lora_rank,
                                                          w.lora_targets, w.lora_dropout,
                                                          linear_saves_input=strategy == "zero3")
    else:
        per_token = saved_activation_bytes_per_token(w.arch, w.seq_len, attention, b.activation,
                                                     autocast=w.precision == "amp")
    activations = w.tokens * per_token
    transient = 2 * w.tokens * w.arch.vocab * 4  # logits' fp32 gradient buffers at the start of backward
    if w.precision == "amp":  # autocast's bf16 copy of each fp32 weight a matmul used, saved for its backward
        if w.method == "lora":  # the frozen base is already bf16: only the fp32 adapters are copied
            transient += 2 * train
        else:  # sharded too: the copy is not FSDP's unsharded storage, so resharding does not free it
            transient += 2 * total
    grads_persist = strategy != "fsdp"  # FSDP frees sharded gradients at zero_grad(set_to_none=True)
    return MemoryEstimate(strategy, weights, grads, optim, activations, transient, gathered, grads_persist)


@dataclass(frozen=True)
class Plan:
    """The planner's answer for one workload on one device capacity."""

    workload: Workload
    capacity_bytes: int
    usable_fraction: float
    estimates: tuple[MemoryEstimate, ...]
    recommended: str | None
    reason: str

    def fits(self, strategy: str) -> bool:
        return self.estimate(strategy).total <= self.usable_bytes

    def estimate(self, strategy: str) -> MemoryEstimate:
        for e in self.estimates:
            if e.strategy == strategy:
                return e
        raise ValueError(f"strategy={strategy!r} is not in this plan; use one of {STRATEGIES}")

    @property
    def usable_bytes(self) -> int:
        return int(self.capacity_bytes * self.usable_fraction)

    @property
    def ddp_fits(self) -> bool:
        return self.fits("ddp")


def plan(w: Workload, capacity_bytes: int, usable_fraction: float = 0.9) -> Plan:
    """Estimate every strategy and recommend DDP if it fits in ``usable_fraction`` of the capacity, else the
    least-sharded strategy that fits (ZeRO-2, then FSDP, then ZeRO-3), else none."""
    if not isinstance(capacity_bytes, int) or capacity_bytes <= 0:
        raise ValueError(f"capacity_bytes={capacity_bytes!r} must be a positive int (device memory in bytes)")
    if not 0 < usable_fraction <= 1:
        raise ValueError(f"usable_fraction={usable_fraction!r} must be in (0, 1]")
    estimates = tuple(estimate(w, s) for s in STRATEGIES)
    usable = int(capacity_bytes * usable_fraction)
    gib = 2**30
    for e in estimates:
        if e.total <= usable:
            if e.strategy == "ddp":
                reason = f"DDP fits ({e.total / gib:.1f} GiB of {usable / gib:.1f} GiB usable): no sharding needed"
            else:
                ddp = estimates[0].total
                reason = (
                    f"DDP needs {ddp / gib:.1f} GiB > {usable / gib:.1f} GiB usable; "
                    f"{e.strategy} fits with {e.total / gib:.1f} GiB per device"
                )
            return Plan(w, capacity_bytes, usable_fraction, estimates, e.strategy, reason)
    best = min(estimates, key=lambda e: e.total)
    reason = (
        f"nothing fits: the smallest is {best.strategy} with {best.total / gib:.1f} GiB > {usable / gib:.1f} GiB "
        f"usable; use more devices (--world), LoRA (--method lora), a shorter sequence or a smaller micro-batch"
    )
    return Plan(w, capacity_bytes, usable_fraction, estimates, None, reason)


def min_world_size(w: Workload, strategy: str, capacity_bytes: int, usable_fraction: float = 0.9,
                   limit: int = 4096) -> int | None:
    """Smallest data-parallel size at which ``strategy`` fits, or None up to ``limit`` devices: the first power of two
    that fits, then bisection below it (the memory per device never grows with the world size)."""
    usable = int(capacity_bytes * usable_fraction)

    def fits(world: int) -> bool:
        return estimate(dataclasses.replace(w, world=world), strategy).total <= usable

    world = 1
    while world <= limit and not fits(world):
        world *= 2
    if world > limit:
        return limit if world // 2 < limit and fits(limit) else None
    low, high = world // 2, world  # low does not fit (or is 0), high fits
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


#: Bytes per parameter of the fp32 model a rank builds in host memory before it moves it to its device.
HOST_BUILD_BYTES = 4


def host_bytes_per_rank(arch: ArchSpec, init: str) -> int:
    """Host memory one rank needs to build the model: the whole fp32 model (``eager``: built on the host, then
    moved), or one unit at a time (``deferred``: FSDP materializes its shard on the device, ZeRO-3 partitions each
    parameter as it is created; the largest unit bounds what is ever whole)."""
    if init == "eager":
        return arch.param_count() * HOST_BUILD_BYTES
    if init == "deferred":
        return _largest_unit_params(arch) * HOST_BUILD_BYTES
    raise ValueError(f"init={init!r} is unknown; use 'eager' or 'deferred'")


def host_fit_problem(arch: ArchSpec, init: str, ranks_per_node: int, host_available_bytes: int | None,
                     usable_fraction: float = 0.9) -> str | None:
    """Why the node's ranks cannot build the model in its RAM (a skip reason), or None (None when RAM is unknown)."""
    if host_available_bytes is None:
        return None
    need = ranks_per_node * host_bytes_per_rank(arch, init)
    usable = int(host_available_bytes * usable_fraction)
    if need <= usable:
        return None
    hint = "a sharded strategy (fsdp, zero3) builds deferred" if init == "eager" else "fewer ranks per node"
    return (f"host memory: {ranks_per_node} ranks x {host_bytes_per_rank(arch, init) / 2**30:.1f} GiB to build "
            f"{arch.id} ({init}) > {usable / 2**30:.1f} GiB usable of the node's available RAM; {hint}")


#: Seconds per billion parameters of the host work a rank does before its first step, on one thread (a rank's share
#: when 8 ranks build at once; torch's default init is one RNG stream): a 50M-parameter nn.Linear's default init,
#: fp32->bf16 cast and weight copy (a move to the device, or a shard split off) timed on a loaded 2-vCPU VM.
HOST_INIT_S_PER_GPARAM = 10.0
HOST_CAST_S_PER_GPARAM = 3.0
HOST_COPY_S_PER_GPARAM = 6.0
#: Gaudi graph compilation before the first step, per decoder layer (lazy mode compiles the step's graph, eager mode
#: its ops' recipes): assumed, not measured; replace with a Gaudi run's measured warm-up.
HPU_COMPILE_S_PER_LAYER = 10.0
#: The modeled start-up times this: hosts slower than the CI VM, memory pressure while 8 ranks build.
STARTUP_SAFETY = 2.0


@dataclass(frozen=True)
class Startup:
    """Modeled seconds a rank spends before its first step: default init of the fp32 weights on the host, the cast
    of the base to bf16 (LoRA, bf16 runs), one copy of the weights (moved to the device, or partitioned), and graph
    compilation on Gaudi."""

    init_s: float
    cast_s: float
    copy_s: float
    compile_s: float

    @property
    def total_s(self) -> float:
        return self.init_s + self.cast_s + self.copy_s + self.compile_s

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "total_s": self.total_s, "source": "modeled"}


def startup(arch: ArchSpec, device_kind: str = "cpu", *, lora: bool = False, precision: str = "fp32") -> Startup:
    """The start-up a job of ``arch`` on ``device_kind`` models (every rank initializes the whole model: eagerly,
    and under ``zero.Init`` each parameter whole before it is partitioned)."""
    gparams = arch.param_count() / 1e9
    return Startup(init_s=HOST_INIT_S_PER_GPARAM * gparams,
                   cast_s=HOST_CAST_S_PER_GPARAM * gparams if lora or precision != "fp32" else 0.0,
                   copy_s=HOST_COPY_S_PER_GPARAM * gparams,
                   compile_s=HPU_COMPILE_S_PER_LAYER * arch.num_layers if device_kind == "hpu" else 0.0)


def job_timeout_s(base_s: float, arch: ArchSpec, device_kind: str = "cpu", *, lora: bool = False,
                  precision: str = "fp32") -> float:
    """The job's timeout: ``base_s`` (``--genai-timeout``, the steps themselves) plus :data:`STARTUP_SAFETY` times
    the modeled :func:`startup` (Llama-3.3-70B LoRA on Gaudi: +71 min), so a full-size job is not killed while it
    is still starting."""
    return float(base_s) + STARTUP_SAFETY * startup(arch, device_kind, lora=lora, precision=precision).total_s
