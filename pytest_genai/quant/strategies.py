"""Hypothesis strategies for the quantizer, drawn from a real model, and the helpers that materialize them.

Pretrained weights are what quantizers fail on (outliers, heavy tails, tied embeddings, widths such as
SmolLM2's 576 = 9 x 64), so these strategies sample *from a given model* instead of inventing weights::

    from hypothesis import given, strategies as st
    from pytest_genai.quant import strategies as qst

    @given(data=st.data())
    def test_mine(model, data):                      # model: any loaded nn.Module (a session fixture)
        layer = data.draw(qst.layers(model, max_rows=1024))        # Layer: name, weight (read only), rows
        fmt, group = data.draw(qst.format_groups(layer.width))     # a format and a group size that fits
        names = data.draw(qst.blocks(model, max_size=2))           # decoder block names, e.g. ("model.layers.3",)
        sub = qst.block_submodel(model, names)       # those blocks (copies), same module names as in the model
        small = qst.truncated_model(model, names)    # the whole model with only those blocks (runs forward)
        cfg = data.draw(qst.plan_configs(widths=qst.widths(sub)))  # tiers, fraction or thresholds, group size

Strategies draw names and numbers, never tensors or modules, so a falsifying example prints and shrinks well
(towards the first layer, the first block, per-channel scales, small fractions). Every model is only read;
the helpers that return models copy what a property may change. Importing this module does not import torch.
"""
from __future__ import annotations

import copy as _copy
import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterable

from hypothesis import strategies as st

from .config import GRANULARITIES, PlanConfig, SensitivityConfig
from .eligibility import block_of, collect_eligible, module_weight
from .formats import FORMATS, FormatSpec, get_format
from .metrics import SENSITIVITY_DEFINITIONS


# -- formats and group sizes -------------------------------------------------------------------------------------
def _specs(names: Iterable[str] | None) -> tuple[FormatSpec, ...]:
    """The formats called ``names`` (default: every format); ValueError listing the known ones for an unknown name."""
    return tuple(FORMATS.values()) if names is None else tuple(get_format(n) for n in names)


def formats(names: Iterable[str] | None = None, *, scaled: bool | None = None):
    """A format name from ``names`` (default: every format); ``scaled=True/False`` keeps only formats with/without
    per-row or per-group scales."""
    chosen = [s.name for s in _specs(names) if scaled is None or s.scaled == scaled]
    if not chosen:
        raise ValueError(f"formats({names!r}, scaled={scaled}): no format left to draw from")
    return st.sampled_from(chosen)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _fits(spec: FormatSpec, widths: tuple[int, ...], group_size: int | None) -> bool:
    try:
        for w in widths:
            spec.check_shape((1, w), group_size)
    except ValueError:
        return False
    return True


def valid_group_sizes(widths: int | Iterable[int], fmts: Iterable[str] | None = None, *,
                      min_size: int = 1) -> list[int | None]:
    """Every group size (``None`` = the format's default: per channel, int4 32) that every format in ``fmts``
    accepts for every width in ``widths`` (in_features): None and the divisors of their gcd, ascending."""
    widths = (int(widths),) if isinstance(widths, int) else tuple(int(w) for w in widths)
    if not widths or any(w <= 0 for w in widths):
        raise ValueError(f"group sizes: widths={widths!r} must be positive in_features")
    specs = _specs(fmts)
    candidates = [None] + [d for d in _divisors(math.gcd(*widths)) if d >= min_size]
    return [g for g in candidates if all(_fits(s, widths, g) for s in specs)]


def group_sizes(widths: int | Iterable[int], fmts: Iterable[str] | None = None, *, min_size: int = 1):
    """A group size that divides every layer width in ``widths`` and suits every format in ``fmts``
    (see :func:`valid_group_sizes`). ``None`` (the format's default: per-channel scales, int4 32) is drawn about
    half the time, as it is the common case and the only one with its own compute path; it is also where
    examples shrink to."""
    sizes = valid_group_sizes(widths, fmts, min_size=min_size)
    if not sizes:
        raise ValueError(f"no group size fits widths {widths!r} for formats {tuple(s.name for s in _specs(fmts))}")
    if sizes[0] is None and len(sizes) > 1:
        return st.one_of(st.none(), st.sampled_from(sizes[1:]))
    return st.sampled_from(sizes)


def format_groups(widths: int | Iterable[int], fmts: Iterable[str] | None = None, *, min_size: int = 1):
    """``(format, group_size)`` valid for a layer of in_features ``widths``: each format equally likely, then a
    group size as :func:`group_sizes` draws it (formats with no valid group are left out: int4 at an odd width)."""
    usable = [s.name for s in _specs(fmts) if valid_group_sizes(widths, (s,), min_size=min_size)]
    if not usable:
        raise ValueError(f"no format of {tuple(s.name for s in _specs(fmts))} can store width(s) {widths!r}")
    return st.sampled_from(usable).flatmap(
        lambda f: group_sizes(widths, (f,), min_size=min_size).map(lambda g: (f, g)))


# -- plans ---------------------------------------------------------------------------------------------------------
def valid_tier_mixes(fmts: Iterable[str] | None = None, sizes: Iterable[int] = (2, 3)) -> list[tuple[str, ...]]:
    """Every tier tuple ``PlanConfig`` accepts: 2 or 3 formats, bits strictly decreasing (high precision first)."""
    specs = sorted(_specs(fmts), key=lambda s: (-s.bits, s.name))
    out = []
    for n in sizes:
        for combo in itertools.combinations(specs, n):
            if all(a.bits > b.bits for a, b in zip(combo, combo[1:])):
                out.append(tuple(s.name for s in combo))
    return out


def tier_mixes(fmts: Iterable[str] | None = None, sizes: Iterable[int] = (2, 3)):
    """A tier mix such as ``("bf16", "int8")`` or ``("fp32", "bf16", "int4")``."""
    mixes = valid_tier_mixes(fmts, sizes)
    if not mixes:
        raise ValueError(f"no 2-3 tier mix with strictly decreasing bits among {tuple(s.name for s in _specs(fmts))}")
    return st.sampled_from(mixes)


def sensitive_fractions(cuts: int = 1):
    """``sensitive_fraction`` for ``cuts + 1`` tiers: a number in [0, 1], or a non-decreasing tuple of them."""
    one = st.floats(0.0, 1.0, allow_nan=False)
    if cuts == 1:
        return one
    return st.lists(one, min_size=cuts, max_size=cuts).map(lambda v: tuple(sorted(v)))


def score_thresholds(cuts: int = 1, scores: Iterable[float] | None = None, *, bounds: tuple[float, float] = (0.0, 1.0)):
    """``score_threshold`` for ``cuts + 1`` tiers: one number or a non-increasing tuple. With ``scores`` the values
    are drawn from the scores themselves (ties on the threshold are where rules go wrong) or inside their range."""
    if scores is not None:
        values = sorted({float(s) for s in scores})
        if not values:
            raise ValueError("score_thresholds: scores is empty")
        one = st.one_of(st.sampled_from(values), st.floats(values[0], values[-1], allow_nan=False))
    else:
        one = st.floats(*bounds, allow_nan=False)
    if cuts == 1:
        return one
    return st.lists(one, min_size=cuts, max_size=cuts).map(lambda v: tuple(sorted(v, reverse=True)))


@st.composite
def plan_configs(draw, *, tiers: tuple[str, ...] | None = None, fmts: Iterable[str] | None = None,
                 widths: Iterable[int] | None = None, scores: Iterable[float] | None = None,
                 rule: str | None = None) -> PlanConfig:
    """A ``PlanConfig``: a tier mix (or ``tiers``), the fraction rule or (``scores`` given, or ``rule="threshold"``)
    the score-threshold rule, and a group size valid for every width in ``widths`` (None when no widths)."""
    tiers = tiers or draw(tier_mixes(fmts))
    cuts = len(tiers) - 1
    rule = rule or draw(st.sampled_from(("fraction", "threshold") if scores is not None else ("fraction",)))
    group = draw(group_sizes(tuple(widths), tiers)) if widths else None
    if rule == "threshold":
        return PlanConfig(tiers=tiers, score_threshold=draw(score_thresholds(cuts, scores)), group_size=group)
    if rule != "fraction":
        raise ValueError(f"plan_configs: rule={rule!r}; use 'fraction' or 'threshold'")
    return PlanConfig(tiers=tiers, sensitive_fraction=draw(sensitive_fractions(cuts)), group_size=group)


@st.composite
def sensitivity_configs(draw, *, include_embeddings: bool = False, include_lm_head: bool = False,
                        sparsity: tuple[float, float] = (0.05, 0.95)) -> SensitivityConfig:
    """A ``SensitivityConfig``: sparsity target, granularity, definition, exact or sampled threshold."""
    return SensitivityConfig(
        sparsity=draw(st.floats(*sparsity, allow_nan=False)),
        granularity=draw(st.sampled_from(GRANULARITIES)),
        definition=draw(st.sampled_from(sorted(SENSITIVITY_DEFINITIONS))),
        include_embeddings=include_embeddings,
        include_lm_head=include_lm_head,
        exact=draw(st.booleans().map(lambda b: not b)),  # shrinks towards the exact threshold
    )


def power_of_two_scales(min_exp: int = -8, max_exp: int = 8):
    """A positive scale ``2**e``: multiplying fp32 weights by it is exact (away from overflow and subnormals), so
    scale-invariance properties can demand equality, not closeness."""
    return st.integers(min_exp, max_exp).map(lambda e: 2.0 ** e)


# -- layers and blocks of a model ------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Layer:
    """One drawn weight matrix: module ``name``, ``weight`` (rows ``start:stop`` of it, a view: read only)."""

    name: str
    weight: Any
    start: int
    stop: int
    rows: int  # of the whole matrix

    @property
    def width(self) -> int:
        return int(self.weight.shape[1])

    @property
    def where(self) -> str:
        return f"module {self.name!r} rows {self.start}:{self.stop}"

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return f"Layer({self.name!r}, rows {self.start}:{self.stop} of {self.rows}, width {self.width})"


def eligible_shapes(model, *, include_embeddings: bool = False, include_lm_head: bool = False) -> dict:
    """``{module name: (out, in)}`` of the quantizer's eligible weights, in module order."""
    eligible, _ = collect_eligible(model, include_embeddings=include_embeddings, include_lm_head=include_lm_head)
    return {e.name: e.shape for e in eligible}


def layers(model, *, include_embeddings: bool = False, include_lm_head: bool = False, max_rows: int | None = None):
    """A :class:`Layer` of ``model``: an eligible weight (nn.Linear; embeddings / LM head on request; a tied copy
    once), whole or, when it has more than ``max_rows`` rows, a window of ``max_rows`` consecutive rows at full
    width (so group sizes and widths are the real ones)."""
    shapes = eligible_shapes(model, include_embeddings=include_embeddings, include_lm_head=include_lm_head)
    if max_rows is not None and max_rows <= 0:
        raise ValueError(f"layers: max_rows={max_rows} must be positive (or None for whole layers)")
    return _layer_windows(model, tuple(shapes.items()), max_rows)


@st.composite
def _layer_windows(draw, model, items, max_rows):
    name, (rows, _) = draw(st.sampled_from(items))
    start, stop = 0, rows
    if max_rows is not None and rows > max_rows:
        start = draw(st.integers(0, rows - max_rows))
        stop = start + max_rows
    weight = module_weight(model, name).detach()[start:stop]
    return Layer(name, weight, start, stop, rows)


def layer_cases(model, fmts: Iterable[str] | None = None, *, include_embeddings: bool = False,
                include_lm_head: bool = False, max_rows: int | None = None):
    """``(Layer, format, group_size)``: a layer of ``model`` (see :func:`layers`) and a format / group size from
    ``fmts`` that its width can take (see :func:`format_groups`)."""
    drawn = layers(model, include_embeddings=include_embeddings, include_lm_head=include_lm_head, max_rows=max_rows)
    return drawn.flatmap(lambda layer: format_groups(layer.width, fmts).map(lambda fg: (layer, *fg)))


def decoder_blocks(model) -> list[str]:
    """Names of the model's decoder blocks holding eligible weights (``model.layers.0``, ...), in order."""
    names = []
    for name in eligible_shapes(model):
        block = block_of(name)
        if block is not None and block not in names:
            names.append(block)
    return names


def blocks(model, *, min_size: int = 1, max_size: int = 2):
    """A sorted tuple of distinct decoder block names of ``model`` (see :func:`decoder_blocks`)."""
    names = decoder_blocks(model)
    if not names:
        raise ValueError(f"{type(model).__name__} has no decoder blocks (module paths with a numeric segment, "
                         "e.g. model.layers.0) holding linear weights")
    order = {n: i for i, n in enumerate(names)}
    return (st.lists(st.sampled_from(names), min_size=min_size, max_size=min(max_size, len(names)), unique=True)
            .map(lambda chosen: tuple(sorted(chosen, key=order.__getitem__))))


def widths(model) -> tuple[int, ...]:
    """The distinct in_features of ``model``'s eligible weights (what a plan's group size must divide)."""
    return tuple(sorted({cols for _, cols in eligible_shapes(model).values()}))


def block_submodel(model, names: Iterable[str], *, copy: bool = True):
    """A plain ``nn.Module`` holding the blocks ``names`` of ``model`` under the same paths, so every module name
    is the model's own (``model.layers.3.mlp.up_proj``). ``copy=True``: deep copies, free to scale or quantize;
    ``copy=False``: the model's own blocks, read only. It has no forward: use :func:`truncated_model` for logits."""
    import torch.nn as nn

    root = nn.Module()
    for name in names:
        block = model.get_submodule(name)
        parent = root
        *path, leaf = name.split(".")
        for part in path:
            if part not in parent._modules:
                parent.add_module(part, nn.Module())
            parent = parent._modules[part]
        parent.add_module(leaf, _copy.deepcopy(block) if copy else block)
    return root


def _shared_tensors(model) -> dict:
    """Embedding matrices and the output embedding (the largest tensors outside the blocks): shared, not copied."""
    import torch.nn as nn

    out = {}
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            out[id(module.weight)] = module.weight
    getter = getattr(model, "get_output_embeddings", None)
    head = getter() if callable(getter) else None
    if head is not None and getattr(head, "weight", None) is not None:
        out[id(head.weight)] = head.weight
    return out


def truncated_model(model, names: Iterable[str]):
    """``model`` with only the decoder blocks ``names`` (renumbered 0..k-1, in order): it runs ``forward`` like the
    model. The kept blocks and every other module are copies, except the embedding matrices and the output
    embedding (tied or not), which are shared with ``model``: quantize the blocks, never the embeddings.
    The config's layer count (and ``layer_types``) follow the kept blocks."""
    import torch.nn as nn

    names = list(names)
    if not names:
        raise ValueError("truncated_model: give at least one block name")
    parents = {n.rsplit(".", 1)[0] for n in names}
    if len(parents) != 1:
        raise ValueError(f"truncated_model: blocks {names} do not share one parent list")
    parent_name = parents.pop()
    blocks_list = model.get_submodule(parent_name)
    if not isinstance(blocks_list, nn.ModuleList):
        raise ValueError(f"truncated_model: {parent_name!r} is a {type(blocks_list).__name__}, not an nn.ModuleList")
    index = [int(n.rsplit(".", 1)[1]) for n in names]
    kept = nn.ModuleList([_copy.deepcopy(blocks_list[i]) for i in index])
    memo = _shared_tensors(model)
    memo[id(blocks_list)] = kept
    small = _copy.deepcopy(model, memo)
    config = getattr(small, "config", None)
    if config is not None:
        total = len(blocks_list)
        for attr in ("num_hidden_layers", "n_layer", "num_layers"):
            if getattr(config, attr, None) == total:
                setattr(config, attr, len(kept))
        types = getattr(config, "layer_types", None)
        if isinstance(types, (list, tuple)) and len(types) == total:
            config.layer_types = [types[i] for i in index]
    return small
