"""Paper A, A1 quantization of an evaluation model through ``pytest_genai.quant``: sensitivity with one global
threshold, a two-tier precision plan, then fake (quantize-dequantize in fp32) or real (stored low precision)."""
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

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"QuantCase.mode={self.mode!r}: use one of {MODES}")
        if self.mode == "fp32" and (self.tiers is not None or self.backend is not None):
            raise ValueError("QuantCase: an fp32 baseline has no tiers or backend; leave them None")
        if self.backend is not None and self.mode != "real":
            raise ValueError(f"QuantCase.backend={self.backend!r} applies to mode='real' only")

    @property
    def id(self) -> str:
        parts = [self.mode]
        if self.tiers:
            parts.append("-".join(self.tiers))
        if self.backend:
            parts.append(self.backend)
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


def resolve_tiers(case: QuantCase, device_kind: str) -> tuple[str, ...]:
    from pytest_genai.quant import default_tiers

    return tuple(case.tiers) if case.tiers else tuple(default_tiers(device_kind))


def resolve_backend(case: QuantCase, device_kind: str) -> str:
    if case.mode != "real":
        return "native"
    return case.backend or REAL_BACKENDS.get(device_kind, "native")


def quantize(model: Any, case: QuantCase, device_kind: str, sync: Any = lambda: None) -> QuantizedModel:
    """Quantize ``model`` in place for ``case`` (fake or real) and measure what it stores."""
    from pytest_genai import quant

    if case.mode == "fp32":
        raise ValueError("quantize: an fp32 case is the baseline; there is nothing to quantize")
    tiers = resolve_tiers(case, device_kind)
    backend = resolve_backend(case, device_kind)
    start = time.perf_counter()
    sensitivity = quant.analyze_sensitivity(model, quant.SensitivityConfig())
    plan = quant.make_plan(sensitivity, quant.PlanConfig(tiers=tiers))
    quant.quantize_model(model, plan, mode=case.mode, backend=backend)
    sync()
    seconds = time.perf_counter() - start
    report = quant.compression_report(None, model) if case.mode == "real" else None
    return QuantizedModel(model, tiers, backend, plan.summary(), report, seconds)
