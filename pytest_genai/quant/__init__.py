"""Sensitivity-aware mixed-precision post-training quantization (Paper A, A1).

Importing this package does not import torch: names resolve on first use (``"module:attr"``).

Phase 1, sensitivity::

    cfg = SensitivityConfig(sparsity=0.3,                     # ONE global magnitude threshold tau
                            granularity="module",             # or "block" (one score per decoder block)
                            definition="fraction_above_global_threshold",  # or "mean_abs_over_threshold"
                            include_embeddings=False, include_lm_head=False, exact=True)
    res = analyze_sensitivity(model, cfg)   # SensitivityResult
    res.threshold       # tau (exact k-th smallest |w| over all eligible weights, k = ceil(0.3 n))
    res.scores          # {unit (module or block name): score}, higher = more sensitive
    res.definition      # the definition's name, e.g. "fraction_above_global_threshold"
    res.eligible_params # eligible weights: nn.Linear weights (+ embeddings / lm_head if asked)
    res.excluded        # {param name: reason}: biases, norms, embeddings, lm_head, tied copies
    res.module_shapes   # {module: (out, in)};  res.to_dict() for JSON

Phase 2, plan (plain data)::

    tiers = default_tiers("cpu")            # cpu: ("bf16","int8"); cuda: ("fp16","int8"); hpu: ("bf16","fp8_e4m3")
    pcfg = PlanConfig(tiers=tiers, sensitive_fraction=0.25, score_threshold=None, group_size=None)
    plan = make_plan(res, pcfg)             # PrecisionPlan
    plan.formats                            # {module: format}
    plan.summary()   # params_per_format, bytes_per_format, mean_bits_per_weight,
                     # predicted_compression_ratio (eligible), predicted_compression_ratio_model
    PrecisionPlan.from_json(plan.to_json()) == plan
    uniform_plan(model_or_result, "int8")   # every eligible module in one format (baselines)

Formats: fp32, fp16, bf16, int8 (symmetric, per output channel or per group), int4 (per group,
default 32, packed two per byte), fp8_e4m3, fp8_e5m2 (float8 with fp32 scales); group sizes must
divide in_features (SmolLM2-135M: 32 or 64). ``quantize`` / ``dequantize`` / ``fake_quantize`` /
``error_bound`` in ``codecs``; bounds documented in ``formats``.

Apply, measure, save::

    qmodel = quantize_model(model, plan, mode="fake")   # q-dq in place, weights stay fp32
    qmodel = quantize_model(model, plan, mode="real", backend="native")  # stored low precision
        # backend: "native" | "torchao" (int8 weight-only) | "inc" (RTN int8/int4 CPU, FP8 HPU)
        #   | "fp8_w8a8" (FP8 compute for the fp8_e4m3 linears: activations quantized per token,
        #     torch._scaled_mm on CPU / CUDA sm_89+, INC FP8 + calibrate(model) on Gaudi);
        # in place, returns the same model; qmodel.genai_quant holds plan, mode, fp32 bytes and
        # compute_paths {module: what its forward runs, e.g. "fp8_w8a8_scaled_mm"}
    prune_(model, res); quantize_model(model, plan, mode="real", sparse="bitmask")  # prune-then-quantize:
        # codes stored as a bitmask + the nonzero codes (quant.sparse); report adds mask_bytes,
        # compression_ratio_without_mask, nonzero_fraction
    rep = compression_report(None, qmodel)  # or (fp32_model_or_bytes, qmodel[, plan], with_file=True)
    rep["compression_ratio"]        # measured: fp32 bytes of eligible weights / bytes stored
    rep["compression_ratio_model"]  # whole state dict; rep["compression_ratio_safetensors"] file
                                    # size (only with_file=True: writes a temp safetensors file)
    rep["stored_bytes"], rep["model_stored_bytes"], rep["safetensors_bytes"],
    rep["predicted_compression_ratio"], rep["compression_ratio_prediction_error"], rep["sparse_storage"]
    save_quantized(qmodel, "m.safetensors", plan)        # safetensors, plan in metadata, atomic
    qmodel2 = load_quantized(fresh_model_same_arch, "m.safetensors")

Real-mode modules (``modules.QuantLinear`` / ``QuantEmbedding``) hold ``qweight`` (+ fp32 ``scale``)
buffers and compute from them: per-channel formats as ``(x @ codes^T) * scale``, per-group ones by
dequantizing. Benchmark support (TinyLlama-1.1B shapes, random weights, peak RSS): ``bench``.

Optional pruning (separate, explicit): ``prune_(model, res)`` zeroes |w| <= tau; alone it keeps dense
storage (no bytes saved); with ``sparse="bitmask"`` the zeros are not stored. Backends raise ``BackendUnavailable`` when their package/device is absent.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "SensitivityConfig": "pytest_genai.quant.config:SensitivityConfig",
    "PlanConfig": "pytest_genai.quant.config:PlanConfig",
    "default_tiers": "pytest_genai.quant.config:default_tiers",
    "FORMATS": "pytest_genai.quant.formats:FORMATS",
    "FormatSpec": "pytest_genai.quant.formats:FormatSpec",
    "get_format": "pytest_genai.quant.formats:get_format",
    "SensitivityResult": "pytest_genai.quant.sensitivity:SensitivityResult",
    "analyze_sensitivity": "pytest_genai.quant.sensitivity:analyze_sensitivity",
    "prune_": "pytest_genai.quant.sensitivity:prune_",
    "PrecisionPlan": "pytest_genai.quant.plan:PrecisionPlan",
    "make_plan": "pytest_genai.quant.plan:make_plan",
    "uniform_plan": "pytest_genai.quant.plan:uniform_plan",
    "quantize_model": "pytest_genai.quant.apply:quantize_model",
    "compression_report": "pytest_genai.quant.storage:compression_report",
    "model_stored_bytes": "pytest_genai.quant.storage:model_stored_bytes",
    "save_quantized": "pytest_genai.quant.storage:save_quantized",
    "load_quantized": "pytest_genai.quant.storage:load_quantized",
    "BackendUnavailable": "pytest_genai.quant.backends:BackendUnavailable",
    "quantize": "pytest_genai.quant.codecs:quantize",
    "dequantize": "pytest_genai.quant.codecs:dequantize",
    "fake_quantize": "pytest_genai.quant.codecs:fake_quantize",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        target = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'pytest_genai.quant' has no attribute {name!r}") from None
    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return __all__
