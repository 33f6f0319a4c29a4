"""Frozen configs of the DABench-LLM Level 2 experiments (Paper B, B2); ``__post_init__`` only validates.

The workload is Level 1's decoder-block stack (:class:`pytest_genai.dabench.config.DecoderConfig`), reused as is.

* :class:`ParallelConfig` — one multi-rank scaling run: data (``dp``), tensor (``tp``) or pipeline (``pp``) parallel,
  compared with the same workload on one rank.
* :class:`BatchSweepConfig` — throughput against batch size, and where the gains plateau.
* :class:`PrecisionConfig` — full precision against a mixed (autocast) or low-precision mode.
"""
from __future__ import annotations

import dataclasses

from pytest_genai.dabench.capacity import MEMORY_HEADROOM  # one headroom for Level 1 and Level 2
from pytest_genai.dabench.config import DecoderConfig

STRATEGIES = ("dp", "tp", "pp")
PARTITIONS = ("optimal", "naive")
PRECISIONS = ("fp32", "amp_bf16", "amp_fp16", "bf16", "fp16")
#: mode -> (autocast dtype or None, parameter dtype)
PRECISION_DTYPES = {
    "fp32": (None, "fp32"),
    "amp_bf16": ("bf16", "fp32"),
    "amp_fp16": ("fp16", "fp32"),
    "bf16": (None, "bf16"),
    "fp16": (None, "fp16"),
}


def _positive_int(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}.{name} must be a positive int, got {value!r}")


def _steps(owner: str, warmup: object, repeats: object) -> None:
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"{owner}.warmup must be an int >= 0, got {warmup!r}")
    _positive_int(owner, "repeats", repeats)


@dataclasses.dataclass(frozen=True)
class ParallelConfig:
    """A ``world_size``-rank run of ``strategy`` on ``workload`` (a training step), against one rank.

    ``workload.batch`` is the batch of one step: per rank for ``dp`` (weak scaling: ``world_size`` times the samples
    per step), the whole step for ``tp`` and ``pp`` (strong scaling: the same samples split across ranks).
    ``pp`` splits ``workload.layers`` blocks plus, when ``head_vocab > 0``, an LM-head layer (LayerNorm + a
    ``hidden x head_vocab`` projection: the heavy last layer of a real LLM) into ``world_size`` stages, and runs
    ``micro_batches`` micro-batches per step (GPipe: all forwards, then all backwards). ``partitions`` names the
    stage splits compared (``optimal``: minimal max stage load from measured per-layer loads; ``naive``: equal
    layer counts).
    """

    strategy: str
    workload: DecoderConfig
    world_size: int = 2
    micro_batches: int = 4
    head_vocab: int = 0
    partitions: tuple[str, ...] = PARTITIONS
    warmup: int = 2
    repeats: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        owner = "ParallelConfig"
        if self.strategy not in STRATEGIES:
            raise ValueError(f"{owner}.strategy {self.strategy!r} is not supported; use one of {STRATEGIES}")
        if not isinstance(self.workload, DecoderConfig):
            raise ValueError(f"{owner}.workload must be a DecoderConfig, got {type(self.workload).__name__}")
        if self.workload.mode != "train":
            raise ValueError(f"{owner}.workload.mode is {self.workload.mode!r}; scaling runs time training steps, "
                             "use dataclasses.replace(workload, mode='train')")
        for name in ("world_size", "micro_batches"):
            _positive_int(owner, name, getattr(self, name))
        if self.world_size < 2:
            raise ValueError(f"{owner}.world_size={self.world_size} must be >= 2 (one rank is the baseline itself)")
        if isinstance(self.head_vocab, bool) or not isinstance(self.head_vocab, int) or self.head_vocab < 0:
            raise ValueError(f"{owner}.head_vocab must be an int >= 0 (0 = no LM head), got {self.head_vocab!r}")
        _steps(owner, self.warmup, self.repeats)
        w = self.workload
        if self.strategy == "tp":
            if w.heads % self.world_size or w.ffn_hidden % self.world_size:
                raise ValueError(
                    f"{owner}: tensor parallel splits attention heads ({w.heads}) and FFN width ({w.ffn_hidden}) "
                    f"across world_size={self.world_size}; pick heads divisible by {self.world_size}"
                )
            if self.head_vocab:
                raise ValueError(f"{owner}.head_vocab applies to pp only; set head_vocab=0 for tp")
        if self.strategy == "pp":
            layers = w.layers + (1 if self.head_vocab else 0)
            if self.world_size > layers:
                raise ValueError(f"{owner}: {self.world_size} pipeline stages need at least as many layers, got "
                                 f"{layers}; raise workload.layers or lower world_size")
            if w.batch % self.micro_batches:
                raise ValueError(f"{owner}: workload.batch={w.batch} must be divisible by micro_batches="
                                 f"{self.micro_batches}")
            bad = [p for p in self.partitions if p not in PARTITIONS]
            if not self.partitions or bad or len(set(self.partitions)) != len(self.partitions):
                raise ValueError(f"{owner}.partitions {self.partitions!r} must be distinct names from {PARTITIONS}")
        elif self.head_vocab:
            raise ValueError(f"{owner}.head_vocab applies to pp only; set head_vocab=0 for {self.strategy}")

    @property
    def id(self) -> str:
        parts = [f"{self.strategy}{self.world_size}", self.workload.id]
        if self.strategy == "pp":
            parts.append(f"mb{self.micro_batches}")
            if self.head_vocab:
                parts.append(f"head{self.head_vocab}")
        return "-".join(parts)

    @property
    def samples_per_step(self) -> int:
        """Samples one multi-rank step processes (the one-rank baseline processes ``workload.batch``)."""
        return self.workload.batch * (self.world_size if self.strategy == "dp" else 1)

    @property
    def micro_batch(self) -> int:
        return self.workload.batch // self.micro_batches if self.strategy == "pp" else self.workload.batch

    def to_json(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["partitions"] = list(self.partitions)
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "ParallelConfig":
        fields = dict(data)
        fields["workload"] = DecoderConfig(**fields["workload"])  # type: ignore[arg-type]
        fields["partitions"] = tuple(fields.get("partitions", PARTITIONS))  # type: ignore[arg-type]
        return cls(**fields)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class BatchSweepConfig:
    """Throughput of ``workload`` at each batch in ``batches`` (``workload.batch`` is replaced per point)."""

    workload: DecoderConfig
    batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    min_gain: float = 0.10
    warmup: int = 1
    repeats: int = 5

    def __post_init__(self) -> None:
        owner = "BatchSweepConfig"
        if not isinstance(self.workload, DecoderConfig):
            raise ValueError(f"{owner}.workload must be a DecoderConfig, got {type(self.workload).__name__}")
        b = tuple(self.batches)
        if len(b) < 2 or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in b):
            raise ValueError(f"{owner}.batches {self.batches!r} must be at least two positive ints, e.g. (1, 2, 4, 8)")
        if any(lo >= hi for lo, hi in zip(b, b[1:])):
            raise ValueError(f"{owner}.batches {self.batches!r} must be strictly increasing")
        if not (isinstance(self.min_gain, (int, float)) and 0 <= self.min_gain < 10):
            raise ValueError(f"{owner}.min_gain {self.min_gain!r} must be a fraction in [0, 10), e.g. 0.10")
        _steps(owner, self.warmup, self.repeats)

    @property
    def id(self) -> str:
        w = dataclasses.replace(self.workload, batch=1).id.replace("-b1-", "-")
        return f"{w}-b{self.batches[0]}to{self.batches[-1]}"

    def at(self, batch: int) -> DecoderConfig:
        return dataclasses.replace(self.workload, batch=batch)


@dataclasses.dataclass(frozen=True)
class PrecisionConfig:
    """``precision`` against fp32 on the same fp32-defined ``workload``.

    ``amp_*``: fp32 parameters, forward under ``torch.autocast`` in bf16/fp16 (mixed precision); ``bf16``/``fp16``:
    parameters and activations in that dtype (pure low precision).
    """

    workload: DecoderConfig
    precision: str = "amp_bf16"
    warmup: int = 1
    repeats: int = 5

    def __post_init__(self) -> None:
        owner = "PrecisionConfig"
        if not isinstance(self.workload, DecoderConfig):
            raise ValueError(f"{owner}.workload must be a DecoderConfig, got {type(self.workload).__name__}")
        if self.workload.dtype != "fp32":
            raise ValueError(f"{owner}.workload.dtype is {self.workload.dtype!r}; the reference is fp32 — set "
                             "dtype='fp32' and choose the low precision with `precision`")
        if self.precision not in PRECISIONS or self.precision == "fp32":
            raise ValueError(f"{owner}.precision {self.precision!r} must be one of {PRECISIONS[1:]} (fp32 is the "
                             "reference it is compared with)")
        _steps(owner, self.warmup, self.repeats)

    @property
    def id(self) -> str:
        return f"{self.precision}-vs-fp32-{self.workload.id.replace('-fp32', '')}"

    @property
    def is_mixed(self) -> bool:
        return self.precision.startswith("amp_")


# -- defaults per device kind and --genai-scale ------------------------------------------------------------------
_SCALES = ("tiny", "small", "full")


def _check_scale(scale: str) -> None:
    if scale not in _SCALES:
        raise ValueError(f"--genai-scale {scale!r} is not a DABench Level 2 scale; use one of {_SCALES}")


def parallel_workload(kind: str, scale: str = "tiny") -> DecoderConfig:
    """The training workload of the scaling runs: on the CPU small enough for a step of ~0.1 s on one core."""
    _check_scale(scale)
    if kind == "cpu":
        hidden = {"tiny": 128, "small": 256, "full": 512}[scale]
        return DecoderConfig(layers=4, hidden=hidden, heads=4, seq_len=64, batch=8, mode="train")
    if kind == "cuda":
        hidden = {"tiny": 1024, "small": 2048, "full": 4096}[scale]
        return DecoderConfig(layers=8, hidden=hidden, heads=hidden // 64, seq_len=1024, batch=8, dtype="bf16",
                             mode="train", attention="sdpa")
    raise ValueError(f"no Level 2 scaling workload for device kind {kind!r}; the torch.distributed runs need cpu or cuda")


def pipeline_workload(kind: str, scale: str = "tiny") -> DecoderConfig:
    """The pipeline runs' block stack: the scaling workload with 8 blocks (the CPU's has 4 for DP and TP).

    With 4 blocks and 2 stages the only splits near balance are 4|head and 3|block+head: whenever the measured
    head weighs under 3 blocks the min-max split *is* the equal-count one, and the comparison has nothing to show
    (a loaded CPU's head weighs 2-4 blocks from run to run). With 8 blocks the equal-count split (5|3 blocks+head)
    is never the min-max one for a head over ~2 blocks.
    """
    workload = parallel_workload(kind, scale)
    return dataclasses.replace(workload, layers=max(workload.layers, 8))


def pipeline_head_vocab(kind: str, scale: str = "tiny") -> int:
    """LM-head width of the pipeline runs: large enough that the head outweighs several blocks (an equal-count
    split is then unbalanced, which the optimal partition fixes). On the CPU 128 x hidden weighs several blocks of
    forward and backward, so the min-max split (7|1+head or 8|head) beats the equal-count one."""
    workload = parallel_workload(kind, scale)
    return (128 if kind == "cpu" else 64) * workload.hidden


def scaling_run(strategy: str, kind: str, scale: str, world_size: int, repeats: int = 10
                ) -> tuple[ParallelConfig | None, str | None]:
    """The scaling run of ``strategy`` at ``world_size`` ranks on ``kind``, or None and why it cannot run there (a
    skip reason): one rank has nothing to scale, a pipeline needs a layer per stage, tensor parallel splits heads and
    FFN width evenly."""
    if world_size < 2:
        return None, "scaling needs at least 2 ranks: --genai-nproc 2 (or more)"
    if strategy == "pp":
        workload, head = pipeline_workload(kind, scale), pipeline_head_vocab(kind, scale)
        layers = workload.layers + (1 if head else 0)
        if world_size > layers:
            return None, (f"pp at world size {world_size}: the {scale} pipeline has {layers} layers ({workload.layers} "
                          f"blocks + the LM head), fewer than {world_size} stages; run it on at most {layers} ranks")
    else:
        workload, head = parallel_workload(kind, scale), 0
        if strategy == "tp" and (workload.heads % world_size or workload.ffn_hidden % world_size):
            return None, (f"tp at world size {world_size}: {workload.heads} attention heads and FFN width "
                          f"{workload.ffn_hidden} do not split evenly over {world_size} ranks; use a world size "
                          f"dividing {workload.heads}")
    return ParallelConfig(strategy, workload, world_size=world_size, head_vocab=head, repeats=repeats), None


def batch_sweep_config(kind: str, scale: str = "tiny") -> BatchSweepConfig:
    _check_scale(scale)
    if kind == "cpu":
        hidden = {"tiny": 128, "small": 256, "full": 512}[scale]
        top = {"tiny": 32, "small": 64, "full": 128}[scale]
        workload = DecoderConfig(layers=2, hidden=hidden, heads=hidden // 64, seq_len=64, batch=1, mode="train")
    elif kind in ("cuda", "hpu"):
        hidden = {"tiny": 1024, "small": 2048, "full": 4096}[scale]
        top = {"tiny": 128, "small": 256, "full": 512}[scale]
        workload = DecoderConfig(layers=4, hidden=hidden, heads=hidden // 64, seq_len=512, batch=1, dtype="bf16",
                                 mode="train", attention="sdpa")
    else:
        raise ValueError(f"no Level 2 batch sweep for device kind {kind!r}; use cpu, cuda or hpu")
    batches = []
    b = 1
    while b <= top:
        batches.append(b)
        b *= 2
    return BatchSweepConfig(workload=workload, batches=tuple(batches))


def _modeled_peak(cfg: DecoderConfig, accelerator: bool) -> int:
    from pytest_genai.dabench.capacity import predicted_peak_bytes

    return predicted_peak_bytes(cfg, foreach_optimizer=accelerator).total


def fitting_batches(cfg: BatchSweepConfig, capacity_bytes: int, *, accelerator: bool = True
                    ) -> tuple[BatchSweepConfig, str | None]:
    """``cfg`` without the batches whose modeled peak (:func:`~pytest_genai.dabench.capacity.predicted_peak_bytes`)
    exceeds ``MEMORY_HEADROOM`` of ``capacity_bytes``, and what was dropped and why (None when nothing was): at
    ``--genai-scale full`` the top batch of the CUDA sweep models 169 GiB, over an H200 and an 80 GB H100 alike.
    Raises ValueError when fewer than two batches fit (no sweep is left to judge)."""
    limit = MEMORY_HEADROOM * capacity_bytes
    peaks = {b: _modeled_peak(cfg.at(b), accelerator) for b in cfg.batches}
    kept = tuple(b for b in cfg.batches if peaks[b] <= limit)
    if len(kept) == len(cfg.batches):
        return cfg, None
    dropped = ", ".join(f"{b} ({peaks[b] / 2**30:.1f} GiB)" for b in cfg.batches if b not in kept)
    why = (f"batches {dropped} left out: their modeled peak is over {MEMORY_HEADROOM:.0%} of the device's "
           f"{capacity_bytes / 2**30:.1f} GiB")
    if len(kept) < 2:
        raise ValueError(f"the batch sweep of {cfg.id} needs two batches that fit; {why}")
    return dataclasses.replace(cfg, batches=kept), why


def precision_fits(cfg: PrecisionConfig, capacity_bytes: int) -> str | None:
    """None when the precision sweep's two stacks (the fp32 reference and the low-precision twin, both trained with
    AdamW and alive together) fit ``MEMORY_HEADROOM`` of ``capacity_bytes`` by the memory model, else why not (at
    ``--genai-scale full`` the hidden-8192 pair models over 80 GB)."""
    w = cfg.workload
    low = dataclasses.replace(w, dtype=PRECISION_DTYPES[cfg.precision][1])
    need = _modeled_peak(w, True) + _modeled_peak(low, True)
    if need <= MEMORY_HEADROOM * capacity_bytes:
        return None
    return (f"the {cfg.precision} sweep of {w.id} keeps two stacks ({w.dtype} and {low.dtype}) with their "
            f"optimizer state: {need / 2**30:.1f} GiB modeled, over {MEMORY_HEADROOM:.0%} of the device's "
            f"{capacity_bytes / 2**30:.1f} GiB; run a smaller --genai-scale")


def precision_workload(kind: str, scale: str = "tiny") -> DecoderConfig:
    _check_scale(scale)
    if kind == "cpu":
        hidden = {"tiny": 256, "small": 512, "full": 1024}[scale]
        return DecoderConfig(layers=2, hidden=hidden, heads=hidden // 64, seq_len=128, batch=4, mode="train")
    if kind in ("cuda", "hpu"):
        hidden = {"tiny": 2048, "small": 4096, "full": 8192}[scale]
        return DecoderConfig(layers=4, hidden=hidden, heads=hidden // 64, seq_len=1024, batch=8, mode="train",
                             attention="sdpa")
    raise ValueError(f"no Level 2 precision workload for device kind {kind!r}; use cpu, cuda or hpu")


def precisions(kind: str) -> tuple[str, ...]:
    """Low-precision modes compared with fp32: fp16 only where the device has fast fp16 kernels."""
    return ("amp_bf16", "bf16") if kind == "cpu" else ("amp_bf16", "amp_fp16", "bf16")
