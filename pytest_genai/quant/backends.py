"""Third-party quantizers as backends, applied to exactly the plan's modules.

- ``torchao``: ``torchao.quantization.quantize_`` with ``Int8WeightOnlyConfig`` (per-row, or
  per-group when the plan has a group size) for the plan's int8 modules.
- ``inc``: Intel Neural Compressor (``neural-compressor-pt``, module ``neural_compressor.torch``):
  RTN weight-only int8/int4 (symmetric, per channel or per group) on CPU through ``prepare`` /
  ``convert``; FP8 (``FP8Config``: prepare, calibrate on a few batches, finalize_calibration, convert) only on
  Gaudi (HPU), where it needs ``habana_frameworks`` - absent here, it raises ``BackendUnavailable``.
- ``fp8_w8a8``: FP8 compute for the plan's fp8_e4m3 linears (activations quantized per token): ``torch._scaled_mm``
  (:mod:`.fp8`) on CPU and CUDA sm_89+, INC FP8 with calibration on Gaudi; ``BackendUnavailable`` elsewhere.

Formats a backend does not handle are left to the native path by ``quantize_model``. Every import
is lazy; a missing package raises ``BackendUnavailable`` with the install hint (tests skip on it).
"""
from __future__ import annotations

import contextlib

from .tree import set_module


class BackendUnavailable(RuntimeError):
    """A backend's package or device is not present; the message says how to get it."""


def _require(module: str, hint: str):
    import importlib

    try:
        return importlib.import_module(module)
    except Exception as exc:  # ImportError, or a broken optional extension
        raise BackendUnavailable(f"{module} is not importable ({type(exc).__name__}: {exc}); {hint}") from None


def torchao_available() -> str | None:
    """None if torchao's int8 weight-only path can be used, else the reason."""
    try:
        _require("torchao.quantization", "pip install torchao")
    except BackendUnavailable as exc:
        return str(exc)
    return None


def inc_available() -> str | None:
    """None if Intel Neural Compressor's torch API can be used, else the reason."""
    try:
        _require("neural_compressor.torch.quantization", "pip install neural-compressor-pt")
    except BackendUnavailable as exc:
        return str(exc)
    return None


def torchao_int8_weight_only(model, names, group_size=None) -> None:
    """torchao int8 weight-only on the ``nn.Linear`` modules ``names`` of ``model`` (in place)."""
    q = _require("torchao.quantization", "pip install torchao")
    if group_size is None:
        cfg = q.Int8WeightOnlyConfig()
    else:
        from torchao.quantization.granularity import PerGroup

        cfg = q.Int8WeightOnlyConfig(granularity=PerGroup(group_size))
    wanted = set(names)
    q.quantize_(model, cfg, filter_fn=lambda module, fqn: fqn in wanted)


def inc_rtn(model, names, bits: int = 8, group_size=None) -> None:
    """INC RTN weight-only (symmetric) on the linear modules ``names`` (in place).

    INC converts every eligible module of the model it is given; to touch exactly ``names`` the
    modules are handed to it in a temporary container and put back converted.
    """
    import torch.nn as nn

    try:  # INC's RTN decides at its import whether transformers' Conv1D exists; import transformers first
        import transformers  # noqa: F401
    except ImportError:
        pass
    q = _require("neural_compressor.torch.quantization", "pip install neural-compressor-pt")
    names = list(names)
    holder = nn.Module()
    for i, name in enumerate(names):
        holder.add_module(f"m{i}", model.get_submodule(name))
    cfg = q.RTNConfig(bits=bits, group_size=-1 if group_size is None else group_size, use_sym=True,
                      use_layer_wise=False)
    converted = q.convert(q.prepare(holder, cfg))
    for i, name in enumerate(names):
        set_module(model, name, converted.get_submodule(f"m{i}"))


@contextlib.contextmanager
def inc_packing_timer():
    """Time INC's int32 packing (``INCWeightOnlyLinear.pack``) inside the block: yields a dict whose ``pack_s`` adds
    up the wall seconds spent packing, so the benchmark can show INC's quantization and its packing apart. The
    original method is restored on exit."""
    import time

    modules = _require("neural_compressor.torch.algorithms.weight_only.modules", "pip install neural-compressor-pt")
    cls = modules.INCWeightOnlyLinear
    original = cls.pack
    spent = {"pack_s": 0.0, "calls": 0}

    def pack(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent["pack_s"] += time.perf_counter() - t0
            spent["calls"] += 1

    cls.pack = pack
    try:
        yield spent
    finally:
        cls.pack = original


def inc_fp8(model, names, calibrate, *, dump_dir=None) -> None:
    """INC FP8 (E4M3) on Gaudi, the flow INC documents: ``prepare`` (insert measurement observers) -> run
    ``calibrate(model)`` on a few batches -> ``finalize_calibration`` (save the measured amax) -> ``convert``
    (quantize with the measured scales). Only the plan's linears ``names`` (INC's ``allowlist``) are converted;
    each converted layer records ``compute_path = "inc_fp8"``. Needs ``habana_frameworks`` (the Gaudi stack).
    """
    import tempfile

    _require("habana_frameworks.torch", "INC FP8 runs on Intel Gaudi (HPU) with the SynapseAI stack")
    q = _require("neural_compressor.torch.quantization", "pip install neural-compressor-pt")
    names = list(names)
    if calibrate is None:
        raise ValueError("INC FP8 measures activations before it quantizes: pass calibrate=<callable running a few "
                         "WikiText batches through the model> to quantize_model")
    import torch.nn as nn

    others = [n for n, m in model.named_modules() if type(m) is nn.Linear and n not in set(names)]
    with tempfile.TemporaryDirectory(prefix="genai-inc-fp8-") as tmp:
        # hp_dtype: the dtype INC's fp8 linears return (its default bf16 would meet fp32 activations in SDPA)
        cfg = q.FP8Config(fp8_config="E4M3", hp_dtype=inc_hp_dtype(model), allowlist=inc_fp8_allowlist(names),
                          dump_stats_path=str(dump_dir or tmp) + "/measure")
        prepared = q.prepare(model, cfg)
        calibrate(prepared)
        q.finalize_calibration(prepared)
        converted = q.convert(prepared)
    if converted is not model:  # INC converts in place; keep the caller's object if it ever does not
        for name in names:
            set_module(model, name, converted.get_submodule(name))
    extra = [n for n in others if inc_converted(converted.get_submodule(n))]
    if extra:  # the plan's other tiers (bf16, the LM head) would silently compute in FP8
        raise RuntimeError(f"INC FP8 converted {len(extra)} linear(s) outside the plan's fp8 layers (first: "
                           f"{extra[0]!r}); its allowlist selected more than {len(names)} module(s)")
    for name in names:  # only a layer INC really converted says so; the mechanics check counts them
        module = model.get_submodule(name)
        if inc_converted(module):
            module.compute_path = "inc_fp8"


#: torch dtype name -> INC FP8Config's ``hp_dtype`` (its ``HpDtype`` enum, by member name in lower case).
INC_HP_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def inc_hp_dtype(model) -> str:
    """INC FP8's ``hp_dtype`` (the precision its converted linears return) for ``model``: the dtype its activations
    flow in, its input embedding's (else its first floating parameter's), so the fp8 layers hand on that dtype."""
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    dtype = (embedding.weight.dtype if embedding is not None
             else next(p.dtype for p in model.parameters() if p.is_floating_point()))
    name = str(dtype).removeprefix("torch.")
    if name not in INC_HP_DTYPES:
        raise ValueError(f"INC FP8 returns one of {sorted(INC_HP_DTYPES)}; the model computes in {name}: cast it with "
                         "model.to(torch.bfloat16) first")
    return INC_HP_DTYPES[name]


def inc_fp8_allowlist(names) -> dict:
    """INC FP8's ``allowlist`` for exactly the modules ``names``.

    INC's ``should_quantize`` converts a module when its class name is in ``allowlist["types"]`` *or* its name
    matches one of ``allowlist["names"]`` with ``re.search``: a ``"Linear"`` type entry converts every linear (the LM
    head too), and a bare name is an unanchored pattern (``layers.1.mlp.up_proj`` also matches
    ``layers.11.mlp.up_proj``, and its dots match any character). So: no types, and each name escaped and anchored.
    """
    import re

    return {"names": [f"^{re.escape(n)}$" for n in names], "types": []}


def inc_converted(module) -> bool:
    """Whether INC converted this linear: its class is no longer ``nn.Linear`` (INC's patched modules), or it holds
    a float8 tensor. A ``convert`` that left the layer as it was must not be recorded as ``inc_fp8``."""
    import torch
    import torch.nn as nn

    fp8 = {torch.float8_e4m3fn, torch.float8_e5m2}
    tensors = list(module.parameters(recurse=True)) + list(module.buffers(recurse=True))
    return type(module) is not nn.Linear or any(t.dtype in fp8 for t in tensors)


def fp8_w8a8(model, names) -> None:
    """FP8 compute (W8A8) through ``torch._scaled_mm`` on the linears ``names`` (:class:`~.fp8.Fp8Linear`)."""
    from .fp8 import Fp8Linear

    for name in names:
        set_module(model, name, Fp8Linear.from_linear(model.get_submodule(name), where=f"module {name!r}"))


def apply_backend(model, plan, backend: str, modules: dict, *, calibrate=None, device_kind=None) -> dict[str, str]:
    """Quantize the plan's modules that ``backend`` handles; returns ``{module: backend}`` for them.

    ``device_kind``: where the weights live (default: the first module's weight device type).
    """
    import torch.nn as nn

    linear = {n: m for n, m in modules.items() if isinstance(m, nn.Linear)}
    by_fmt: dict[str, list[str]] = {}
    for name in linear:
        by_fmt.setdefault(plan.formats[name], []).append(name)
    if device_kind is None:
        device_kind = next(iter(modules.values())).weight.device.type
    fp8_names = by_fmt.get("fp8_e4m3", [])
    done: dict[str, str] = {}
    if backend == "torchao":
        if by_fmt.get("int8"):
            torchao_int8_weight_only(model, by_fmt["int8"], plan.group_size)
            done.update({n: "torchao" for n in by_fmt["int8"]})
    elif backend == "inc":
        for fmt, bits in (("int8", 8), ("int4", 4)):
            if by_fmt.get(fmt):
                inc_rtn(model, by_fmt[fmt], bits=bits, group_size=plan.group_size or (32 if bits == 4 else None))
                done.update({n: "inc" for n in by_fmt[fmt]})
        if fp8_names:
            if device_kind != "hpu":
                raise BackendUnavailable("INC FP8 quantization runs on Gaudi (HPU) only; use backend='native' "
                                         "for fp8 on this device")
            inc_fp8(model, fp8_names, calibrate)
            done.update({n: "inc" for n in fp8_names})
    elif backend == "fp8_w8a8":
        if not fp8_names:
            raise ValueError("backend='fp8_w8a8' computes the plan's fp8_e4m3 linears in FP8, and this plan has none; "
                             "use tiers with fp8_e4m3 (e.g. ('bf16', 'fp8_e4m3'))")
        if device_kind == "hpu":
            inc_fp8(model, fp8_names, calibrate)
        else:
            if plan.group_size is not None:
                raise ValueError(f"backend='fp8_w8a8' scales each weight row once; plan.group_size="
                                 f"{plan.group_size} is per group: make the plan without group_size")
            from .fp8 import fp8_compute_support

            reason = fp8_compute_support(next(iter(modules.values())).weight.device)
            if reason is not None:
                raise BackendUnavailable(reason)
            fp8_w8a8(model, fp8_names)
        done.update({n: "fp8_w8a8" for n in fp8_names})
    else:
        raise ValueError(f"backend={backend!r}: use 'torchao', 'inc' or 'fp8_w8a8' here ('native' is built in)")
    return done
