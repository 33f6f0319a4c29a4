"""Configs of the quantizer: frozen dataclasses, validated in ``__post_init__``, with an ``id``."""
from __future__ import annotations

from dataclasses import dataclass

from .formats import FORMATS
from .metrics import SENSITIVITY_DEFINITIONS

GRANULARITIES = ("module", "block")
_SHORT_DEFS = {"fraction_above_global_threshold": "frac", "mean_abs_over_threshold": "meanabs"}


@dataclass(frozen=True)
class SensitivityConfig:
    """How to score layers (Paper A, A1 phase 1).

    sparsity: the pruning target that sets the ONE global threshold tau over all eligible weights.
    granularity: "module" (one score per linear) or "block" (one per decoder block).
    definition: a name in ``metrics.SENSITIVITY_DEFINITIONS``.
    include_embeddings / include_lm_head: make those matrices eligible (default: excluded, reported).
    exact: tau is the exact k-th smallest |w|; otherwise the quantile of a random sample.
    sample_size: at most this many magnitudes (and no more than n / 256, at least 4096) are sampled to
        bracket tau before the exact pass; seed: for that sample.
    """

    sparsity: float = 0.3
    granularity: str = "module"
    definition: str = "fraction_above_global_threshold"
    include_embeddings: bool = False
    include_lm_head: bool = False
    exact: bool = True
    sample_size: int = 1 << 20
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.sparsity, bool) or not isinstance(self.sparsity, (int, float)) or not 0.0 < self.sparsity < 1.0:
            raise ValueError(
                f"SensitivityConfig.sparsity={self.sparsity!r}: must be a number strictly between 0 and 1 "
                "(the paper uses 0.3)"
            )
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"SensitivityConfig.granularity={self.granularity!r}: use one of {GRANULARITIES}")
        if self.definition not in SENSITIVITY_DEFINITIONS:
            raise ValueError(
                f"SensitivityConfig.definition={self.definition!r}: use one of {sorted(SENSITIVITY_DEFINITIONS)}"
            )
        if not isinstance(self.sample_size, int) or self.sample_size < 16:
            raise ValueError(f"SensitivityConfig.sample_size={self.sample_size!r}: use an int >= 16 (default 2**20)")

    @property
    def id(self) -> str:
        extra = ("-emb" if self.include_embeddings else "") + ("-head" if self.include_lm_head else "")
        exact = "" if self.exact else "-sampled"
        return f"sp{self.sparsity:g}-{self.granularity}-{_SHORT_DEFS.get(self.definition, self.definition)}{extra}{exact}"


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


@dataclass(frozen=True)
class PlanConfig:
    """How to turn scores into formats (Paper A, A1 phase 2).

    tiers: 2 or 3 format names from high to low precision (e.g. ("bf16", "int8")).
    sensitive_fraction: for 2 tiers the fraction of units (ranked by score, most sensitive first)
        kept in the high tier; for 3 tiers a pair of cumulative fractions (tier 0, tiers 0-1).
    score_threshold: if set, replaces sensitive_fraction: a unit with score >= threshold goes to
        the high tier (3 tiers: a pair of descending thresholds).
    group_size: per-group scales for scaled formats (None = per output channel; int4 then uses 32).
    """

    tiers: tuple[str, ...] = ("bf16", "int8")
    sensitive_fraction: float | tuple[float, ...] = 0.25
    score_threshold: float | tuple[float, ...] | None = None
    group_size: int | None = None

    def __post_init__(self) -> None:
        tiers = self.tiers
        if isinstance(tiers, str) or not isinstance(tiers, (tuple, list)) or not 2 <= len(tiers) <= 3:
            raise ValueError(f"PlanConfig.tiers={tiers!r}: give 2 or 3 format names, high precision first, "
                             "e.g. ('bf16', 'int8')")
        for t in tiers:
            if t not in FORMATS:
                raise ValueError(f"PlanConfig.tiers: unknown format {t!r}; known formats: {sorted(FORMATS)}")
        bits = [FORMATS[t].bits for t in tiers]
        if any(a <= b for a, b in zip(bits, bits[1:])):
            raise ValueError(f"PlanConfig.tiers={tuple(tiers)!r}: bits {bits} must strictly decrease from the "
                             "first (sensitive) tier to the last")
        cuts = len(tiers) - 1
        if self.score_threshold is None:  # the fraction rule is used (a threshold replaces it)
            fr = _as_tuple(self.sensitive_fraction)
            if len(fr) != cuts or any(isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= f <= 1.0
                                      for f in fr):
                raise ValueError(f"PlanConfig.sensitive_fraction={self.sensitive_fraction!r}: give {cuts} number(s) "
                                 "in [0, 1] (cumulative for 3 tiers)")
            if any(a > b for a, b in zip(fr, fr[1:])):
                raise ValueError(f"PlanConfig.sensitive_fraction={self.sensitive_fraction!r}: cumulative fractions "
                                 "must not decrease")
        if self.score_threshold is not None:
            th = _as_tuple(self.score_threshold)
            if len(th) != cuts or any(isinstance(t, bool) or not isinstance(t, (int, float)) for t in th):
                raise ValueError(f"PlanConfig.score_threshold={self.score_threshold!r}: give {cuts} number(s)")
            if any(a < b for a, b in zip(th, th[1:])):
                raise ValueError(f"PlanConfig.score_threshold={self.score_threshold!r}: thresholds must not "
                                 "increase (high tier first)")
        if self.group_size is not None and (isinstance(self.group_size, bool) or not isinstance(self.group_size, int)
                                            or self.group_size <= 0):
            raise ValueError(f"PlanConfig.group_size={self.group_size!r}: use None (per channel) or a positive int "
                             "dividing in_features (e.g. 32 or 64 for hidden 576)")

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(float(f) for f in _as_tuple(self.sensitive_fraction))

    @property
    def thresholds(self) -> tuple[float, ...] | None:
        return None if self.score_threshold is None else tuple(float(t) for t in _as_tuple(self.score_threshold))

    @property
    def id(self) -> str:
        if self.thresholds is not None:
            rule = "thr" + "_".join(f"{t:g}" for t in self.thresholds)
        else:
            rule = "frac" + "_".join(f"{f:g}" for f in self.fractions)
        group = "" if self.group_size is None else f"-g{self.group_size}"
        return "-".join(self.tiers) + f"-{rule}{group}"


_DEFAULT_TIERS = {
    # Paper A, A1: FP16/INT8 on A100, BF16/FP8 on Gaudi; CPU: bf16/int8 (int8 weight-only kernels exist on CPU).
    "cuda": ("fp16", "int8"),
    "hpu": ("bf16", "fp8_e4m3"),
    "cpu": ("bf16", "int8"),
}


def default_tiers(device_kind) -> tuple[str, ...]:
    """The paper's (high, low) formats for a device kind ('cuda', 'hpu', 'cpu') or a Device."""
    kind = getattr(device_kind, "kind", device_kind)
    try:
        return _DEFAULT_TIERS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"default_tiers: no paper default for device kind {kind!r}; known: {sorted(_DEFAULT_TIERS)}; "
                         "pass PlanConfig(tiers=...) explicitly") from None
