"""Phase 2 of Paper A, A1: the precision plan (module name -> format), as plain data."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from .config import PlanConfig
from .formats import FormatSpec, get_format
from .metrics import compression_ratio, mean_bits_per_weight

PLAN_SCHEMA = "pytest-genai/quant-plan/1"


@dataclass(frozen=True)
class PrecisionPlan:
    """``formats`` {module: format}, the ``shapes`` they apply to and the ``group_size``.

    ``other_bytes`` / ``other_fp32_bytes``: the model's state outside the plan (kept as stored),
    used to predict the whole-model ratio. ``scores``/``units``/``sensitivity``/``threshold`` record
    where the plan came from (empty for a hand-written plan). ``specs``: ``formats`` resolved to FormatSpecs.
    """

    formats: dict[str, str]
    shapes: dict[str, tuple[int, int]]
    group_size: int | None = None
    tiers: tuple[str, ...] = ()
    other_bytes: int = 0
    other_fp32_bytes: int = 0
    sensitivity: str | None = None
    threshold: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    specs: dict[str, FormatSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.formats:
            raise ValueError("PrecisionPlan.formats is empty: a plan needs at least one module")
        object.__setattr__(self, "specs", {name: get_format(fmt) for name, fmt in self.formats.items()})
        for name, spec in self.specs.items():
            if name not in self.shapes:
                raise ValueError(f"PrecisionPlan: module {name!r} has a format but no shape; add shapes[{name!r}]")
            spec.check_shape(tuple(self.shapes[name]), self.group_size, where=f"module {name!r}")

    def stored_bytes(self, name: str) -> int:
        return self.specs[name].stored_bytes(self.shapes[name], self.group_size)

    def summary(self) -> dict:
        """Parameters / modules / bytes per format, mean bits per weight, predicted compression ratios."""
        params: dict[str, int] = {}
        modules: dict[str, int] = {}
        nbytes: dict[str, int] = {}
        for name, fmt in self.formats.items():
            r, c = self.shapes[name]
            params[fmt] = params.get(fmt, 0) + r * c
            modules[fmt] = modules.get(fmt, 0) + 1
            nbytes[fmt] = nbytes.get(fmt, 0) + self.stored_bytes(name)
        total_params = sum(params.values())
        stored = sum(nbytes.values())
        fp32 = 4 * total_params
        nominal = sum(s.bits * math.prod(self.shapes[n]) for n, s in self.specs.items()) / total_params
        return {
            "tiers": list(self.tiers),
            "group_size": self.group_size,
            "sensitivity": self.sensitivity,
            "threshold": self.threshold,
            "modules": len(self.formats),
            "modules_per_format": modules,
            "params_per_format": params,
            "bytes_per_format": nbytes,
            "eligible_params": total_params,
            "eligible_fp32_bytes": fp32,
            "predicted_stored_bytes": stored,
            "nominal_bits_per_weight": nominal,
            "mean_bits_per_weight": mean_bits_per_weight(stored, total_params),
            "predicted_compression_ratio": compression_ratio(fp32, stored),
            "predicted_compression_ratio_model": compression_ratio(fp32 + self.other_fp32_bytes,
                                                                   stored + self.other_bytes),
        }

    def to_dict(self) -> dict:
        return {
            "schema": PLAN_SCHEMA,
            "formats": dict(self.formats),
            "shapes": {k: list(v) for k, v in self.shapes.items()},
            "group_size": self.group_size,
            "tiers": list(self.tiers),
            "other_bytes": self.other_bytes,
            "other_fp32_bytes": self.other_fp32_bytes,
            "sensitivity": self.sensitivity,
            "threshold": self.threshold,
            "scores": dict(self.scores),
            "units": dict(self.units),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "PrecisionPlan":
        if d.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"PrecisionPlan.from_dict: schema {d.get('schema')!r} is not {PLAN_SCHEMA!r}")
        return cls(
            formats=dict(d["formats"]),
            shapes={k: (int(v[0]), int(v[1])) for k, v in d["shapes"].items()},
            group_size=d.get("group_size"),
            tiers=tuple(d.get("tiers", ())),
            other_bytes=int(d.get("other_bytes", 0)),
            other_fp32_bytes=int(d.get("other_fp32_bytes", 0)),
            sensitivity=d.get("sensitivity"),
            threshold=d.get("threshold"),
            scores={k: float(v) for k, v in d.get("scores", {}).items()},
            units=dict(d.get("units", {})),
        )

    @classmethod
    def from_json(cls, text: str) -> "PrecisionPlan":
        return cls.from_dict(json.loads(text))


def _cut(fraction: float, n: int) -> int:
    """Units in the tiers above a cumulative ``fraction``: round half up (monotone in ``fraction``)."""
    return min(n, math.floor(fraction * n + 0.5))


def assign_tiers(scores: dict[str, float], cfg: PlanConfig) -> dict[str, int]:
    """Tier index (0 = most precise) per unit. Units are ranked by score, highest (most
    sensitive) first, ties by name; a threshold rule compares scores directly."""
    if cfg.thresholds is not None:
        return {u: sum(1 for t in cfg.thresholds if s < t) for u, s in scores.items()}
    ranked = sorted(scores, key=lambda u: (-scores[u], u))
    cuts = [_cut(f, len(ranked)) for f in cfg.fractions]
    return {u: sum(1 for c in cuts if i >= c) for i, u in enumerate(ranked)}


def make_plan(result, cfg: PlanConfig | None = None) -> PrecisionPlan:
    """Sensitive units -> the high tier, robust units -> the low tier (see ``PlanConfig``)."""
    cfg = cfg or PlanConfig()
    tiers = assign_tiers(result.scores, cfg)
    formats: dict[str, str] = {}
    unit_of: dict[str, str] = {}
    for unit, modules in result.units.items():
        for m in modules:
            formats[m] = cfg.tiers[tiers[unit]]
            unit_of[m] = unit
    return PrecisionPlan(
        formats=formats,
        shapes=dict(result.module_shapes),
        group_size=cfg.group_size,
        tiers=tuple(cfg.tiers),
        other_bytes=result.other_bytes,
        other_fp32_bytes=result.other_fp32_bytes,
        sensitivity=result.definition,
        threshold=result.threshold,
        scores=dict(result.scores),
        units=unit_of,
    )


def uniform_plan(source, fmt: str, group_size: int | None = None, *, include_embeddings: bool = False,
                 include_lm_head: bool = False) -> PrecisionPlan:
    """Every eligible module in one format (the single-precision baselines).

    ``source``: a SensitivityResult, or a model (then no sensitivity pass is run; eligibility as in
    ``SensitivityConfig``, with the include flags given here).
    """
    fmt = get_format(fmt).name
    if hasattr(source, "module_shapes"):
        shapes, other, other32 = dict(source.module_shapes), source.other_bytes, source.other_fp32_bytes
        sens, tau = source.definition, source.threshold
    else:
        from .eligibility import collect_eligible, module_weight
        from .sensitivity import state_bytes

        eligible, _ = collect_eligible(source, include_embeddings=include_embeddings,
                                       include_lm_head=include_lm_head)
        shapes = {e.name: e.shape for e in eligible}
        ids = {id(module_weight(source, e.name)) for e in eligible}
        sizes, total = state_bytes(source)
        other = total - sum(b for i, (b, _) in sizes.items() if i in ids)
        other32 = 4 * sum(n for i, (_, n) in sizes.items() if i not in ids)
        sens, tau = None, None
    return PrecisionPlan(formats={m: fmt for m in shapes}, shapes=shapes, group_size=group_size, tiers=(fmt,),
                         other_bytes=other, other_fp32_bytes=other32, sensitivity=sens, threshold=tau)
