"""Apply a precision plan to a model: "fake" (quantize-dequantize, kept fp32) or "real" (stored low precision).

Both work module by module, in place: at most one layer's temporaries exist at a time, and in
real mode each fp32 weight is released as soon as its quantized replacement is installed, so
peak memory stays close to the fp32 model's size.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .tree import set_module  # noqa: F401  (re-exported: callers put modules back through apply)

MODES = ("fake", "real")
BACKENDS = ("native", "torchao", "inc", "fp8_w8a8")
SPARSE = (None, "bitmask")


@dataclass(frozen=True)
class QuantInfo:
    """What ``quantize_model`` did; stored on the model as ``model.genai_quant``."""

    plan: object  # PrecisionPlan
    mode: str
    backend: str
    model_fp32_bytes: int  # 4 x numel of the model's state before quantization
    eligible_fp32_bytes: int
    backend_formats: dict  # {module: backend that quantized it}
    compute_paths: dict = field(default_factory=dict)  # {module: what its forward runs}, e.g. fp8_w8a8_scaled_mm
    sparse: str | None = None  # "bitmask": prune-then-quantize codes stored as bitmask + nonzero codes


def resolve_modules(model, plan) -> dict:
    """``{name: module}`` for every module of ``plan``; ValueError naming a missing or mismatched one."""
    import torch.nn as nn

    out = {}
    for name in plan.formats:
        try:
            module = model.get_submodule(name)
        except AttributeError:
            raise ValueError(f"plan names module {name!r}, which {type(model).__name__} does not have; "
                             "build the plan from this model (analyze_sensitivity + make_plan)") from None
        if not isinstance(module, (nn.Linear, nn.Embedding)):
            raise ValueError(f"plan module {name!r} is a {type(module).__name__}, not nn.Linear/nn.Embedding "
                             "(already quantized? quantize a fresh model)")
        shape = tuple(module.weight.shape)
        if shape != tuple(plan.shapes[name]):
            raise ValueError(f"plan module {name!r}: weight shape {shape} differs from the plan's "
                             f"{tuple(plan.shapes[name])}; the plan was made for another model")
        out[name] = module
    return out


def _model_fp32_bytes(model) -> int:
    seen = {}
    for t in model.state_dict(keep_vars=True).values():
        seen[id(t)] = t.numel()
    return 4 * sum(seen.values())


def _tied_groups(model, names) -> dict[str, list[str]]:
    """Plan modules whose weight is shared with another module (e.g. tied embeddings / lm_head)."""
    users: dict[int, list[str]] = {}
    for mname, module in model.named_modules():
        w = getattr(module, "weight", None)
        if w is not None:
            users.setdefault(id(w), []).append(mname)
    out = {}
    for name in names:
        w = model.get_submodule(name).weight
        if len(users.get(id(w), [])) > 1:
            out[name] = users[id(w)]
    return out


def compute_path_of(module, backend: str) -> str:
    """The compute path a quantized module's forward runs (recorded per layer in ``QuantInfo.compute_paths``)."""
    path = getattr(module, "compute_path", None)
    if isinstance(path, str):
        return path
    return {"torchao": "torchao_int8_weight_only", "inc": "inc_" + type(module).__name__}.get(backend, backend)


def quantize_model(model, plan, mode: str = "fake", backend: str = "native", *, sparse: str | None = None,
                   calibrate=None, device_generation: str | None = None):
    """Quantize ``model`` in place following ``plan`` and return it (with ``model.genai_quant``).

    mode: "fake" (weights replaced by dequantize(quantize(w)), kept fp32 (a new tensor per weight): the paper's
    simulated mode) or "real" (nn.Linear -> QuantLinear, nn.Embedding -> QuantEmbedding storing
    the low-precision tensors). backend: "native" (pytest-genai codecs, every device), "torchao"
    (int8 weight-only via torchao.quantize_) or "inc" (Intel Neural Compressor RTN int8/int4 on
    CPU, FP8 on HPU) or "fp8_w8a8" (FP8 compute: the plan's fp8_e4m3 linears quantize their activations too and
    multiply in FP8 - ``torch._scaled_mm`` on CPU / CUDA sm_89+, INC FP8 on Gaudi; BackendUnavailable elsewhere);
    real mode only; formats a backend does not handle are done natively. sparse="bitmask" (real, native): linears
    store their codes as a bitmask + nonzero codes (prune first, e.g. ``prune_``, for it to save bytes).
    calibrate: ``calibrate(model)`` runs a few batches; INC FP8 measures activations with it (Gaudi only).
    device_generation: the generation the model will run on (``Device.generation``); a format whose range the
    hardware narrows is scaled to that range (fp8 e4m3 on ``gaudi2``: 240, see ``formats.device_qmax``).
    Which path each layer computes with is recorded in ``model.genai_quant.compute_paths``.
    """
    import torch
    import torch.nn as nn

    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: use one of {MODES}")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use one of {BACKENDS}")
    if backend != "native" and mode != "real":
        raise ValueError(f"backend={backend!r} only does real quantization; use mode='real' or backend='native'")
    if sparse not in SPARSE:
        raise ValueError(f"sparse={sparse!r}: use one of {SPARSE}")
    if sparse is not None and (mode != "real" or backend != "native"):
        raise ValueError(f"sparse={sparse!r} stores the native real-mode codes; use mode='real', backend='native'")
    from .formats import device_qmax

    modules = resolve_modules(model, plan)
    model_fp32 = _model_fp32_bytes(model)
    eligible_fp32 = 4 * sum(r * c for r, c in plan.shapes.values())
    done: dict[str, str] = {}

    if mode == "fake":
        with torch.no_grad():
            from .codecs import fake_quantize
            from .eligibility import replace_weight_values

            for name, module in modules.items():
                w, spec = module.weight, plan.specs[name]
                replace_weight_values(w, fake_quantize(w, spec, plan.group_size, where=f"module {name!r}",
                                                       qmax=device_qmax(spec, device_generation)))
                done[name] = "native"
    else:
        tied = _tied_groups(model, modules)
        if tied:
            name, users = next(iter(tied.items()))
            raise ValueError(f"module {name!r} shares its weight with {users}; real quantization of tied weights "
                             "is not supported - untie them, exclude them, or use mode='fake'")
        if backend != "native":
            from . import backends

            done.update(backends.apply_backend(model, plan, backend, modules, calibrate=calibrate))
            for name in modules:
                if name not in done and model.get_submodule(name) is not modules[name]:
                    # quantizing the backend's module again natively would drop the backend's own scales
                    raise RuntimeError(f"backend {backend!r} replaced module {name!r}, which the plan leaves to the "
                                       f"native path ({plan.formats[name]}); the backend converted outside its set")
        from .modules import QuantEmbedding, QuantLinear, SparseQuantLinear

        linear_cls = SparseQuantLinear if sparse == "bitmask" else QuantLinear

        with torch.no_grad():
            for name, module in modules.items():
                if name in done:
                    continue
                spec = plan.specs[name]
                where = f"module {name!r}"
                qmax = device_qmax(spec, device_generation)
                if isinstance(module, nn.Embedding):
                    new = QuantEmbedding.from_embedding(module, spec, plan.group_size, where=where, qmax=qmax)
                else:
                    new = linear_cls.from_linear(module, spec, plan.group_size, where=where, qmax=qmax)
                set_module(model, name, new)
                modules[name] = None  # drop the last reference to the fp32 weight
                done[name] = "native"
                del module
    paths = {n: "fake_quant_fp32" if mode == "fake" else compute_path_of(model.get_submodule(n), done[n])
             for n in plan.formats}
    model.genai_quant = QuantInfo(plan, mode, backend, model_fp32, eligible_fp32, done, paths, sparse)
    return model
