"""Measured storage of a (quantized) model, its compression ratio, and safetensors save / load.

Bytes are counted from what the tensors really hold: each distinct storage once
(``untyped_storage().nbytes()``), looking inside tensor subclasses (torchao's ``Int8Tensor``)
through ``__tensor_flatten__``. Nothing is predicted here; the plan's prediction is compared to it.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pytest_genai.atomic import atomic_path

from .metrics import compression_ratio, relative_error

META_KEY = "pytest_genai.quant_plan"
META_MODE = "pytest_genai.quant_mode"
META_SPARSE = "pytest_genai.quant_sparse"  # "bitmask" when linears store bitmask + nonzero codes
META_FP8_COMPUTE = "pytest_genai.quant_fp8_compute"  # plan modules computing in FP8 (W8A8), JSON list


def _leaf_tensors(t):
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None and type(t).__name__ not in ("Tensor", "Parameter"):
        names, _ = t.__tensor_flatten__()
        for n in names:
            yield from _leaf_tensors(getattr(t, n))
    else:
        yield t


def tensors_stored_bytes(tensors, seen: set | None = None) -> int:
    """Bytes of the distinct storages behind ``tensors`` (subclasses looked into)."""
    seen = set() if seen is None else seen
    total = 0
    for t in tensors:
        if t is None:
            continue
        for leaf in _leaf_tensors(t):
            storage = leaf.untyped_storage()
            key = (storage.data_ptr(), leaf.device.type, storage.nbytes())
            if key in seen:
                continue
            seen.add(key)
            total += storage.nbytes()
    return total


def model_stored_bytes(model) -> int:
    """Bytes the model's parameters and persistent buffers occupy (its state dict, shared storage once)."""
    return tensors_stored_bytes(model.state_dict(keep_vars=True).values())


def _module_tensors(module):
    return list(module.state_dict(keep_vars=True).values())


def eligible_stored_bytes(model, plan) -> int:
    """Bytes of the weights (values and scales, no biases) of the plan's modules as now stored."""
    total = 0
    seen: set = set()
    for name in plan.formats:
        module = model.get_submodule(name)
        tensors = [v for k, v in module.state_dict(keep_vars=True).items() if not k.endswith("bias")]
        total += tensors_stored_bytes(tensors, seen)
    return total


def compression_report(original, qmodel, plan=None, *, with_file: bool = True) -> dict:
    """Measured compression of ``qmodel`` against the fp32 ``original`` (a model or its fp32 bytes;
    None = the size recorded by ``quantize_model``).

    Keys: ``compression_ratio`` (eligible weights: fp32 bytes / stored bytes),
    ``compression_ratio_model`` (whole state dict), ``compression_ratio_safetensors`` (fp32 bytes of
    the model / size of its safetensors file; only ``with_file``), the byte counts, the plan's
    predictions and their relative error (the plan predicts dense storage), ``sparse_storage`` (False: zeros are
    stored densely; ``"bitmask"``: the model was quantized with ``sparse="bitmask"``). Sparse models add
    ``mask_bytes`` (in ``stored_bytes``), ``stored_bytes_without_mask``, ``compression_ratio_without_mask`` (the
    mask counted as free: an upper bound no real format reaches) and ``nonzero_fraction`` of the eligible codes.
    """
    info = getattr(qmodel, "genai_quant", None)
    plan = plan or (info.plan if info else None)
    if plan is None:
        raise ValueError("compression_report: pass the plan, or a model returned by quantize_model")
    if original is None:
        if info is None:
            raise ValueError("compression_report: original=None needs a model returned by quantize_model")
        model_fp32 = info.model_fp32_bytes
    elif isinstance(original, int):
        model_fp32 = original
    else:
        model_fp32 = 4 * sum({id(t): t.numel() for t in original.state_dict(keep_vars=True).values()}.values())
    eligible_fp32 = 4 * sum(r * c for r, c in plan.shapes.values())
    stored_eligible = eligible_stored_bytes(qmodel, plan)
    stored_model = model_stored_bytes(qmodel)
    summary = plan.summary()
    measured = compression_ratio(eligible_fp32, stored_eligible)
    measured_model = compression_ratio(model_fp32, stored_model)
    out = {
        "compression_ratio": measured,
        "compression_ratio_model": measured_model,
        "eligible_fp32_bytes": eligible_fp32,
        "stored_bytes": stored_eligible,
        "model_fp32_bytes": model_fp32,
        "model_stored_bytes": stored_model,
        "predicted_compression_ratio": summary["predicted_compression_ratio"],
        "predicted_compression_ratio_model": summary["predicted_compression_ratio_model"],
        "compression_ratio_prediction_error": relative_error(measured, summary["predicted_compression_ratio"]),
        "mean_bits_per_weight": 8.0 * stored_eligible / (eligible_fp32 / 4),
        "sparse_storage": (info.sparse if info is not None else None) or False,
    }
    if out["sparse_storage"]:
        out.update(sparse_accounting(qmodel, plan, eligible_fp32, stored_eligible))
    if with_file:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.safetensors"
            save_quantized(qmodel, path, plan)
            out["safetensors_bytes"] = path.stat().st_size
        out["compression_ratio_safetensors"] = compression_ratio(model_fp32, out["safetensors_bytes"])
    return out


def sparse_accounting(qmodel, plan, eligible_fp32: int, stored_eligible: int) -> dict:
    """Mask bytes, the ratio with the mask counted as free, and the nonzero fraction of the plan's codes."""
    from .sparse import semi_structured_support

    masks, nonzeros, device = 0, 0, "cpu"
    for name in plan.formats:
        module = qmodel.get_submodule(name)
        if hasattr(module, "sparse_weight"):
            sw = module.sparse_weight()
            masks += sw.mask_nbytes()
            nonzeros += sw.nonzeros
            device = sw.values.device
        else:  # a dense module in a sparse model (an embedding): every code is stored
            r, c = plan.shapes[name]
            nonzeros += r * c
    params = eligible_fp32 // 4
    return {"mask_bytes": masks, "stored_bytes_without_mask": stored_eligible - masks,
            "compression_ratio_without_mask": compression_ratio(eligible_fp32, stored_eligible - masks),
            "nonzero_fraction": nonzeros / params,
            # 2:4 needs its own pruning (2 of every 4) and CUDA kernels; the global threshold's zeros are unstructured
            "semi_structured_2_4": "not used: " + (semi_structured_support(device) or
                                                    "kernels present, but the global-threshold mask is not 2:4")}


def _flatten_subclass(key: str, t):
    """``(name, plain tensor)`` pairs for ``t``; tensor subclasses (torchao) become their inner
    tensors named ``key::attr`` (measured and saved; such files are not reloadable here)."""
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None and type(t).__name__ not in ("Tensor", "Parameter"):
        names, _ = t.__tensor_flatten__()
        for n in names:
            yield from _flatten_subclass(f"{key}::{n}", getattr(t, n))
    else:
        yield key, t


def _state_for_saving(model) -> dict:
    """State dict with shared tensors once and every tensor contiguous (safetensors' requirement)."""
    out = {}
    seen = set()
    for k, v in model.state_dict().items():
        for name, t in _flatten_subclass(k, v):
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.dtype)
            if t.numel() and key in seen:
                continue
            seen.add(key)
            out[name] = t.detach().contiguous()
    return out


def save_quantized(qmodel, path, plan=None) -> Path:
    """Write the quantized model's tensors to ``path`` (safetensors, no pickle), with the plan
    and the mode in the file's metadata. Written atomically (:func:`pytest_genai.atomic.atomic_path`)."""
    from safetensors.torch import save_file

    info = getattr(qmodel, "genai_quant", None)
    plan = plan or (info.plan if info else None)
    if plan is None:
        raise ValueError("save_quantized: pass the plan, or a model returned by quantize_model")
    mode = info.mode if info else "real"
    path = Path(path)
    tensors = _state_for_saving(qmodel)
    meta = {META_KEY: plan.to_json(), META_MODE: mode}
    if info is not None and info.sparse:
        meta[META_SPARSE] = info.sparse
    fp8 = sorted(n for n, b in (info.backend_formats if info else {}).items() if b == "fp8_w8a8")
    if fp8:
        meta[META_FP8_COMPUTE] = json.dumps(fp8)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=meta)
    return path


def read_plan(path):
    """The PrecisionPlan and mode stored in a file written by ``save_quantized``."""
    from safetensors import safe_open

    from .plan import PrecisionPlan

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    if META_KEY not in meta:
        raise ValueError(f"{path}: no {META_KEY!r} metadata; was it written by save_quantized?")
    return PrecisionPlan.from_json(meta[META_KEY]), meta.get(META_MODE, "real")


def load_quantized(model_skeleton, path):
    """Rebuild a quantized model from ``path`` into ``model_skeleton`` (a freshly built model of the
    same architecture, any weights): plan modules become empty Quant* modules (real mode), then
    every tensor is loaded strictly. Returns the model, with ``model.genai_quant`` set."""
    import torch.nn as nn
    from safetensors.torch import load_file

    from .apply import QuantInfo, _model_fp32_bytes, resolve_modules, set_module
    from .modules import QuantEmbedding, QuantLinear

    from safetensors import safe_open

    from .fp8 import Fp8Linear
    from .modules import SparseQuantLinear

    plan, mode = read_plan(path)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    sparse = meta.get(META_SPARSE)
    fp8 = set(json.loads(meta.get(META_FP8_COMPUTE, "[]")))
    modules = resolve_modules(model_skeleton, plan)
    model_fp32 = _model_fp32_bytes(model_skeleton)
    state = load_file(str(path))
    if mode == "real":
        for name, module in modules.items():
            spec = plan.specs[name]
            if isinstance(module, nn.Embedding):
                new = QuantEmbedding(module.num_embeddings, module.embedding_dim, spec, plan.group_size,
                                     module.padding_idx, device=module.weight.device)
            elif sparse == "bitmask":  # the number of nonzero codes is the file's
                new = SparseQuantLinear(module.in_features, module.out_features, spec, plan.group_size,
                                        bias=module.bias is not None, device=module.weight.device,
                                        nonzeros=int(state[f"{name}.qvalues"].shape[0]))
            else:
                new = QuantLinear(module.in_features, module.out_features, spec, plan.group_size,
                                  bias=module.bias is not None, device=module.weight.device)
                if name in fp8:  # same buffers; the FP8-compute forward
                    new = Fp8Linear(new.quantized_weight(), new.bias)
            if hasattr(new, "activation_dtype"):  # what its forward will see: the skeleton's dtype
                new.activation_dtype = module.weight.dtype
            set_module(model_skeleton, name, new)
    expected = set(model_skeleton.state_dict())
    missing = expected - set(state)
    # tied tensors were saved once: fill the aliases from the tensor they share storage with
    if missing:
        sd = model_skeleton.state_dict()
        by_storage = {}
        for k, t in sd.items():
            by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(k)
        for k in list(missing):
            for alias in by_storage.get(sd[k].untyped_storage().data_ptr(), []):
                if alias in state:
                    state[k] = state[alias]
                    missing.discard(k)
                    break
    if missing:
        raise ValueError(f"{path}: tensors missing for {sorted(missing)[:5]}; the file is for another model")
    model_skeleton.load_state_dict(state, strict=True)
    eligible_fp32 = 4 * sum(r * c for r, c in plan.shapes.values())
    from .apply import compute_path_of

    done = {n: "fp8_w8a8" if n in fp8 else "native" for n in plan.formats}
    paths = {n: "fake_quant_fp32" if mode == "fake" else compute_path_of(model_skeleton.get_submodule(n), done[n])
             for n in plan.formats}
    model_skeleton.genai_quant = QuantInfo(plan, mode, "fp8_w8a8" if fp8 else "native", model_fp32, eligible_fp32,
                                           done, paths, sparse)
    return model_skeleton
