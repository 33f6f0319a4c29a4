"""Phase 1 of Paper A, A1: per-layer sensitivity from weight magnitudes and ONE global threshold."""
from __future__ import annotations

from dataclasses import dataclass, field

from .config import SensitivityConfig
from .eligibility import collect_eligible, module_weight, replace_weight_values
from .metrics import SENSITIVITY_DEFINITIONS


@dataclass(frozen=True)
class SensitivityResult:
    """Scores of one model.

    threshold: tau, the global magnitude threshold; threshold_rank: weights with |w| <= tau;
    target_rank: ceil(sparsity * eligible_params); scores: {unit: score} (unit = module or block);
    units: {unit: module names}; module_shapes: {module: (out, in)}; excluded: {param: reason};
    other_bytes / other_fp32_bytes: the model's non-eligible state (as stored / as fp32).
    """

    definition: str
    granularity: str
    sparsity: float
    threshold: float
    target_rank: int
    threshold_rank: int
    exact: bool
    eligible_params: int
    scores: dict[str, float]
    units: dict[str, tuple[str, ...]]
    module_shapes: dict[str, tuple[int, int]]
    module_kinds: dict[str, str]
    excluded: dict[str, str]
    other_bytes: int
    other_fp32_bytes: int
    tied: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def excluded_summary(self) -> dict[str, int]:
        """Number of excluded parameters per reason kind (bias, normalization, embedding, ...)."""
        out: dict[str, int] = {}
        for reason in self.excluded.values():
            if reason.startswith("tied"):
                key = "tied"
            elif reason.startswith("not "):
                key = "other"
            else:
                key = reason.split(" (")[0]
            out[key] = out.get(key, 0) + 1
        return out

    def to_dict(self, *, with_scores: bool = True) -> dict:
        d = {
            "sensitivity": self.definition,
            "granularity": self.granularity,
            "sparsity": self.sparsity,
            "threshold": self.threshold,
            "target_rank": self.target_rank,
            "threshold_rank": self.threshold_rank,
            "exact": self.exact,
            "eligible_params": self.eligible_params,
            "eligible_modules": len(self.module_shapes),
            "excluded": self.excluded_summary(),
        }
        if with_scores:
            d["scores"] = dict(self.scores)
        return d


def state_bytes(model) -> tuple[dict[int, tuple[int, int]], int]:
    """``({id(tensor): (stored_bytes, numel)}, total_stored_bytes)`` over the model's state dict, shared tensors once."""
    seen: dict[int, tuple[int, int]] = {}
    for t in model.state_dict(keep_vars=True).values():
        if id(t) not in seen:
            seen[id(t)] = (t.numel() * t.element_size(), t.numel())
    return seen, sum(b for b, _ in seen.values())


def analyze_sensitivity(model, cfg: SensitivityConfig | None = None) -> SensitivityResult:
    """Score every eligible unit of ``model`` against the global threshold tau (see ``threshold``)."""
    import torch

    from .threshold import global_threshold

    cfg = cfg or SensitivityConfig()
    eligible, excluded = collect_eligible(model, include_embeddings=cfg.include_embeddings,
                                         include_lm_head=cfg.include_lm_head, granularity=cfg.granularity)
    weights = [module_weight(model, e.name) for e in eligible]
    with torch.no_grad():
        th = global_threshold(weights, cfg.sparsity, exact=cfg.exact, sample_size=cfg.sample_size, seed=cfg.seed)

    per_unit: dict[str, list] = {}
    units: dict[str, list[str]] = {}
    for e, n, above, s in zip(eligible, th.numel, th.n_above, th.sum_abs):
        acc = per_unit.setdefault(e.unit, [0, 0, 0.0])
        acc[0] += n
        acc[1] += above
        acc[2] += s
        units.setdefault(e.unit, []).append(e.name)
    score = SENSITIVITY_DEFINITIONS[cfg.definition]
    scores = {u: float(score(n, above, s, th.tau)) for u, (n, above, s) in per_unit.items()}

    sizes, total = state_bytes(model)
    eligible_ids = {id(w) for w in weights}
    other = total - sum(sizes[i][0] for i in eligible_ids if i in sizes)
    other_numel = sum(numel for i, (_, numel) in sizes.items() if i not in eligible_ids)
    return SensitivityResult(
        definition=cfg.definition,
        granularity=cfg.granularity,
        sparsity=float(cfg.sparsity),
        threshold=th.tau,
        target_rank=th.k,
        threshold_rank=th.rank,
        exact=th.exact,
        eligible_params=th.n,
        scores=scores,
        units={u: tuple(v) for u, v in units.items()},
        module_shapes={e.name: e.shape for e in eligible},
        module_kinds={e.name: e.kind for e in eligible},
        excluded=excluded,
        other_bytes=int(other),
        other_fp32_bytes=int(4 * other_numel),
        tied={e.name: e.tied for e in eligible if e.tied},
    )


def prune_(model, result: SensitivityResult) -> dict:
    """Zero every eligible weight with ``|w| <= tau`` (optional, explicit step; the model is changed, each weight
    gets a tensor of its own: ``eligibility.replace_weight_values``).

    Storage stays dense: the zeros take as many bytes as before, so no compression is claimed
    for them (``sparse_storage: False`` in the returned summary) until the model is quantized with
    ``quantize_model(..., mode="real", sparse="bitmask")`` (prune-then-quantize).
    """
    import torch

    pruned = 0
    with torch.no_grad():
        for name in result.module_shapes:
            w = module_weight(model, name)
            mask = w.abs() <= result.threshold
            pruned += int(mask.sum())
            replace_weight_values(w, w.masked_fill(mask, 0.0))
    return {"pruned_params": pruned, "eligible_params": result.eligible_params,
            "pruned_fraction": pruned / result.eligible_params, "threshold": result.threshold,
            "sparse_storage": False}
