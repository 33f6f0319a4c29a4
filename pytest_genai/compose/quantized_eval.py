"""Paper A, A1 quantization of an evaluation model through ``pytest_genai.quant``: sensitivity with one global
threshold, a two-tier precision plan, then fake (quantize-dequantize in fp32) or real (stored low precision).

Real mode options (each its own case id): backend ``fp8_w8a8`` computes the fp8 layers in FP8 (activations quantized
too: ``torch._scaled_mm``, INC FP8 with calibration on Gaudi) instead of storing fp8 weights only; ``sparsity
="bitmask"`` prunes with the sensitivity pass's global threshold first (the paper's unified pruning threshold) and
stores the pruned codes as a bitmask + nonzero codes."""
from __future__ import annotations

import dataclasses
import time
from typing import Any

MODES = ("fp32", "fake", "real")

#: Real-mode backend per device kind: the suite's own codecs (the same quantizer as fake mode) except on Gaudi, where
#: the paper used Intel Neural Compressor for FP8. Formats a backend does not handle are quantized natively.
REAL_BACKENDS = {"cpu": "native", "cuda": "native", "hpu": "inc"}


@dataclasses.dataclass(frozen=True)
class QuantCase:
    """One row of the A1 benchmark: mode, task, and the precision tiers (None: the device's paper default)."""

    mode: str
    task: str
    tiers: tuple[str, ...] | None = None
    backend: str | None = None  # real mode only; None: REAL_BACKENDS for the device, else native
    sparsity: str | None = None  # real mode only: "bitmask" = prune |w| <= tau, then store the codes sparsely

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"QuantCase.mode={self.mode!r}: use one of {MODES}")
        if self.mode == "fp32" and (self.tiers is not None or self.backend is not None):
            raise ValueError("QuantCase: an fp32 baseline has no tiers or backend; leave them None")
        if self.backend is not None and self.mode != "real":
            raise ValueError(f"QuantCase.backend={self.backend!r} applies to mode='real' only")
        if self.sparsity is not None and (self.mode != "real" or self.sparsity != "bitmask"):
            raise ValueError(f"QuantCase.sparsity={self.sparsity!r}: use 'bitmask' with mode='real' (or None)")

    @property
    def id(self) -> str:
        parts = [self.mode]
        if self.tiers:
            parts.append("-".join(self.tiers))
        if self.backend:
            parts.append(self.backend)
        if self.sparsity:
            parts.append(f"pruned-{self.sparsity}")
        parts.append(self.task)
        return "-".join(parts)


@dataclasses.dataclass
class QuantizedModel:
    model: Any
    tiers: tuple[str, ...]
    backend: str
    plan_summary: dict[str, Any]
    report: dict[str, Any] | None  # quant.compression_report for real mode (measured), None for fake
    seconds: float
    compute_paths: dict[str, str] = dataclasses.field(default_factory=dict)  # {module: what its forward runs}
    pruning: dict[str, Any] | None = None  # quant.prune_'s summary when the case prunes


def resolve_tiers(case: QuantCase, device_kind: str) -> tuple[str, ...]:
    from pytest_genai.quant import default_tiers

    return tuple(case.tiers) if case.tiers else tuple(default_tiers(device_kind))


def resolve_backend(case: QuantCase, device_kind: str) -> str:
    if case.mode != "real":
        return "native"
    return case.backend or REAL_BACKENDS.get(device_kind, "native")


def compute_path_counts(paths: dict[str, str]) -> dict[str, int]:
    """``{compute path: number of layers}``, sorted by path (the per-layer map is attached beside it)."""
    counts: dict[str, int] = {}
    for path in paths.values():
        counts[path] = counts.get(path, 0) + 1
    return dict(sorted(counts.items()))


def quantize(model: Any, case: QuantCase, device_kind: str, sync: Any = lambda: None,
             calibrate: Any = None, device_generation: str | None = None) -> QuantizedModel:
    """Quantize ``model`` in place for ``case`` (fake or real) and measure what it stores.

    ``calibrate(model)``: a few batches through the model, for backends that measure activations (INC FP8).
    ``device_generation``: where the model runs; fp8 codes are scaled to that hardware's range (Gaudi2: 240)."""
    from pytest_genai import quant

    if case.mode == "fp32":
        raise ValueError("quantize: an fp32 case is the baseline; there is nothing to quantize")
    tiers = resolve_tiers(case, device_kind)
    backend = resolve_backend(case, device_kind)
    start = time.perf_counter()
    sensitivity = quant.analyze_sensitivity(model, quant.SensitivityConfig())
    pruning = quant.prune_(model, sensitivity) if case.sparsity else None
    plan = quant.make_plan(sensitivity, quant.PlanConfig(tiers=tiers))
    quant.quantize_model(model, plan, mode=case.mode, backend=backend, sparse=case.sparsity, calibrate=calibrate,
                         device_generation=device_generation)
    sync()
    seconds = time.perf_counter() - start
    report = quant.compression_report(None, model) if case.mode == "real" else None
    return QuantizedModel(model, tiers, backend, plan.summary(), report, seconds,
                          dict(model.genai_quant.compute_paths), pruning)


def resident_bytes(model: Any, torch_device: Any) -> int:
    """Bytes of ``model``'s parameters and buffers that live on ``torch_device`` (each tensor counted once)."""
    seen: set[int] = set()
    total = 0
    for t in (*model.parameters(), *model.buffers()):
        if t.device == torch_device and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def wikitext_calibration(ids: Any, torch_device: Any, sync: Any = lambda: None, batches: int = 4) -> Any:
    """``calibrate(model)`` running up to ``batches`` WikiText rows of ``ids`` ([batch, seq] tokens), one forward each:
    the measurement pass INC FP8 runs between ``prepare`` and ``convert`` (Gaudi)."""
    from pytest_genai.evals import throughput

    def calibrate(model: Any) -> None:
        for row in ids[:batches]:
            throughput.forward_fn(model, row.unsqueeze(0), torch_device, sync)()

    return calibrate


def mechanics_problems(case: QuantCase, quantized: QuantizedModel, device_kind: str,
                       sparsity_target: float = 0.3) -> list[str]:
    """What a row's quantized model did against what its case asked for (empty: as asked).

    fp8_w8a8: every fp8_e4m3 layer of the plan computed in FP8 (``fp8_w8a8_scaled_mm``; ``inc_fp8`` on Gaudi), none
    fell back. bitmask: at least ``sparsity_target`` of the stored eligible codes are zero (counted from storage), the
    report says bitmask storage, and the zeros paid for the mask (measured ratio above the plan's dense prediction,
    and below the ratio that counts the mask as free).
    """
    problems: list[str] = []
    if case.backend == "fp8_w8a8":
        want = "inc_fp8" if device_kind == "hpu" else "fp8_w8a8_scaled_mm"
        n_fp8 = quantized.plan_summary["modules_per_format"].get("fp8_e4m3", 0)
        got = sum(1 for p in quantized.compute_paths.values() if p == want)
        if n_fp8 == 0 or got != n_fp8:
            problems.append(f"fp8_w8a8: {got} of the plan's {n_fp8} fp8_e4m3 layers computed with {want}; paths "
                            f"{compute_path_counts(quantized.compute_paths)}")
    if case.sparsity:
        report = quantized.report or {}
        # the stored codes' own count (the bitmask's zeros), not the pruning step's |w| <= tau count, which is at
        # least the target by construction: zeros lost on the way to storage would not show there
        zero = 1.0 - report["nonzero_fraction"] if "nonzero_fraction" in report else None
        if zero is None or zero < sparsity_target:
            problems.append(f"{'no' if zero is None else f'{zero:.4f}'} of the stored eligible codes are zero, "
                            f"below the {sparsity_target} target")
        if report.get("sparse_storage") != case.sparsity:
            problems.append(f"report sparse_storage={report.get('sparse_storage')!r}, case asked {case.sparsity!r}")
        elif not (quantized.plan_summary["predicted_compression_ratio"] < report["compression_ratio"]
                  < report["compression_ratio_without_mask"]):
            problems.append(f"bitmask storage did not pay: dense prediction "
                            f"{quantized.plan_summary['predicted_compression_ratio']:.3f}, measured "
                            f"{report['compression_ratio']:.3f}, without mask {report['compression_ratio_without_mask']:.3f}")
    return problems
