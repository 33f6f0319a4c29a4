"""Which weights the sensitivity analysis and the plan may touch (Paper A, A1).

Eligible: the weight matrix of every ``nn.Linear`` (the transformer layers' projections).
Never eligible: biases, normalization parameters, any other 1-D parameter or buffer.
Embeddings (``nn.Embedding``) and the LM head (the model's output embeddings) are eligible only
when the config says so; every excluded parameter is reported with its reason.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_BLOCK = re.compile(r"^(.*?\.\d+)(?:\.|$)")


@dataclass(frozen=True)
class EligibleWeight:
    """One eligible weight matrix: its module ``name``, ``kind`` ('linear' | 'embedding' | 'lm_head'),
    ``shape`` (out, in), the sensitivity ``unit`` it belongs to, and ``tied`` (other modules sharing it)."""

    name: str
    kind: str
    shape: tuple[int, int]
    unit: str
    tied: tuple[str, ...] = ()

    @property
    def numel(self) -> int:
        return self.shape[0] * self.shape[1]


def block_of(module_name: str) -> str | None:
    """The decoder block a module belongs to: the prefix up to the first numeric path segment
    (``model.layers.3.mlp.up_proj`` -> ``model.layers.3``); None outside any block."""
    m = _BLOCK.match(module_name)
    return m.group(1) if m else None


def _is_norm(module) -> bool:
    return "norm" in type(module).__name__.lower()


def _custom_forward(module) -> str:
    """Why a ``nn.Linear`` / ``nn.Embedding`` subclass with a ``forward`` of its own is not eligible ("" when it is
    plain): Gemma's scaled word embeddings multiply by ``embed_scale``, MoE routers return tuples; a real-mode
    ``QuantLinear`` / ``QuantEmbedding`` in their place would silently drop that, and one plan serves both modes."""
    import torch.nn as nn

    for base in (nn.Linear, nn.Embedding):
        if isinstance(module, base) and type(module).forward is not base.forward:
            return (f"{type(module).__name__} overrides {base.__name__}.forward (real mode would replace it by a "
                    "plain quantized module)")
    return ""


def _output_embedding_names(model, named: dict) -> set[str]:
    head = None
    getter = getattr(model, "get_output_embeddings", None)
    if callable(getter):
        try:
            head = getter()
        except (NotImplementedError, AttributeError):
            head = None
    names = {n for n, m in named.items() if head is not None and m is head}
    names |= {n for n in named if n.split(".")[-1] in ("lm_head", "embed_out")}
    return names


def collect_eligible(model, *, include_embeddings: bool = False, include_lm_head: bool = False,
                     granularity: str = "module"):
    """``(eligible, excluded)``: the eligible weights in module order, and ``{param_name: reason}``
    for every parameter that is not eligible. ValueError when nothing is eligible."""
    import torch.nn as nn

    named = dict(model.named_modules())
    heads = _output_embedding_names(model, named)
    eligible: list[EligibleWeight] = []
    excluded: dict[str, str] = {}
    seen: dict[int, tuple[str, int | None]] = {}  # id(weight) -> (first module, index or None)

    for mname, module in named.items():
        custom = _custom_forward(module)
        if custom:  # real mode swaps in a plain quantized module: its own forward (a scale, a tuple) would be lost
            for pname, param in module.named_parameters(recurse=False):
                excluded[f"{mname}.{pname}" if mname else pname] = custom
                seen.setdefault(id(param), (mname, None))  # a weight tied to it is excluded with it
            continue
        if isinstance(module, nn.Linear) and mname in heads:
            kind, allowed, why = "lm_head", include_lm_head, "lm_head (include_lm_head=False)"
        elif isinstance(module, nn.Linear):
            kind, allowed, why = "linear", True, ""
        elif isinstance(module, nn.Embedding):
            kind, allowed, why = "embedding", include_embeddings, "embedding (include_embeddings=False)"
        else:
            kind = None
        for pname, param in module.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            if kind is None:
                excluded[full] = "normalization" if _is_norm(module) else f"not a linear/embedding weight ({type(module).__name__})"
                continue
            if pname != "weight":
                excluded[full] = "bias" if pname == "bias" else f"not the weight matrix ({pname})"
                continue
            if param.dim() != 2:
                excluded[full] = f"not a 2-D matrix (shape {tuple(param.shape)})"
                continue
            if id(param) in seen:
                first_name, idx = seen[id(param)]
                if idx is None:
                    excluded[full] = f"tied to {first_name}.weight, which is excluded"
                    if kind == "lm_head" and allowed:  # asked for: say why it has no effect
                        excluded[full] += (" (include_lm_head=True has no effect: a tied LM head is that matrix; "
                                           "set include_embeddings=True as well)")
                else:
                    first = eligible[idx]
                    eligible[idx] = EligibleWeight(first.name, first.kind, first.shape, first.unit,
                                                   first.tied + (mname,))
                    excluded[full] = f"tied to {first_name}.weight (counted once)"
                continue
            if not allowed:
                excluded[full] = why
                seen[id(param)] = (mname, None)
                continue
            unit = mname
            if granularity == "block":
                unit = block_of(mname) or mname
            seen[id(param)] = (mname, len(eligible))
            eligible.append(EligibleWeight(mname, kind, (int(param.shape[0]), int(param.shape[1])), unit))
    if not eligible:
        raise ValueError(
            f"{type(model).__name__}: no eligible weight matrices (nn.Linear weights of the transformer layers); "
            "pass a model with linear layers, or set include_embeddings/include_lm_head"
        )
    return eligible, excluded


def replace_weight_values(weight, values) -> None:
    """Give ``weight`` (a model's parameter) the values ``values``, a tensor of its shape, as a tensor of its own
    swapped in through ``.data``: the parameter object stays, so tied uses and the module see the new values. Not
    written into the old storage: a model loaded from safetensors keeps its weights in copy-on-write file mappings,
    where the first write to each page faults (SmolLM2-135M's 106 M linear weights: 1.65 s written in place, 0.27 s
    into new tensors, measured 2026-12-01)."""
    if tuple(values.shape) != tuple(weight.shape):
        raise ValueError(f"new weight values of shape {tuple(values.shape)} for a weight of shape {tuple(weight.shape)}")
    if values.data_ptr() == weight.data_ptr():
        return
    weight.data = values.to(dtype=weight.dtype, device=weight.device).contiguous()


def module_weight(model, name: str):
    """The weight tensor of module ``name``; ValueError naming the module if the model lacks it."""
    try:
        module = model.get_submodule(name)
    except AttributeError:
        raise ValueError(f"module {name!r} is not in {type(model).__name__}; check the plan against this model") from None
    weight = getattr(module, "weight", None)
    if weight is None:
        raise ValueError(f"module {name!r} ({type(module).__name__}) has no weight to quantize")
    return weight
