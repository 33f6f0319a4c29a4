"""Pure metric functions of the quantizer (floats in, floats out).

Sensitivity definitions (Paper A, A1: a per-layer score from weight magnitudes against ONE global
pruning threshold tau set by a sparsity target; the paper gives no formula, so the definition is
pluggable and named in every result). Every definition has the signature
``f(n, n_above, sum_abs, tau) -> float`` over a unit's ``n`` eligible weights, of which
``n_above`` have ``|w| > tau`` and whose magnitudes sum to ``sum_abs``; a higher score means a
more sensitive unit. Both are invariant to scaling every weight by the same ``c > 0``.
"""
from __future__ import annotations

import math
from fractions import Fraction


def fraction_above_global_threshold(n: int, n_above: int, sum_abs: float, tau: float) -> float:
    """Fraction of the unit's weights with ``|w| > tau`` (the ones a global ``tau`` prune would keep).

    A unit with many weights below the global threshold is robust (pruning-style saliency).
    Range [0, 1].
    """
    if n <= 0:
        raise ValueError(f"n={n}: a sensitivity unit needs at least one weight")
    if not 0 <= n_above <= n:
        raise ValueError(f"n_above={n_above} must lie in [0, n={n}]")
    return n_above / n


def mean_abs_over_threshold(n: int, n_above: int, sum_abs: float, tau: float) -> float:
    """Mean ``|w|`` of the unit divided by the global threshold ``tau`` (magnitude relative to tau)."""
    if n <= 0:
        raise ValueError(f"n={n}: a sensitivity unit needs at least one weight")
    if not tau > 0:
        raise ValueError(
            f"tau={tau}: mean_abs_over_threshold needs a positive global threshold; more than the sparsity "
            "target of the weights are exactly zero - lower SensitivityConfig.sparsity or use "
            "definition='fraction_above_global_threshold'"
        )
    return sum_abs / (n * tau)


SENSITIVITY_DEFINITIONS = {
    "fraction_above_global_threshold": fraction_above_global_threshold,
    "mean_abs_over_threshold": mean_abs_over_threshold,
}


def threshold_rank(sparsity: float, n: int) -> int:
    """1-based rank ``k = ceil(sparsity * n)`` (clamped to [1, n]) of the global threshold among |w|.

    Pruning every weight with ``|w| <= tau`` (tau = the k-th smallest |w|) removes at least the
    sparsity target of the ``n`` weights, exactly ``k`` when no magnitudes tie.
    """
    if not 0.0 < sparsity < 1.0:
        raise ValueError(f"sparsity={sparsity}: must lie strictly between 0 and 1 (e.g. 0.3 for 30%)")
    if n <= 0:
        raise ValueError(f"n={n}: need at least one eligible weight")
    # exact: the sparsity as the decimal it was written as (0.3, not the double just below it), times n, rounded up.
    # ``ceil(sparsity * n - 1e-9 * n)`` undershot by one once 1e-9 * n passed the fraction (0.3 x 969M weights).
    return min(n, max(1, math.ceil(Fraction(repr(float(sparsity))) * n)))


def compression_ratio(fp32_bytes: float, stored_bytes: float) -> float:
    """fp32 bytes of the original weights / bytes actually stored (Paper A: "compression ratio")."""
    if stored_bytes <= 0:
        raise ValueError(f"stored_bytes={stored_bytes}: must be positive")
    if fp32_bytes < 0:
        raise ValueError(f"fp32_bytes={fp32_bytes}: must be non-negative")
    return fp32_bytes / stored_bytes


def mean_bits_per_weight(stored_bytes: float, params: int) -> float:
    """Stored bits (values and scales) per weight: ``8 * stored_bytes / params``."""
    if params <= 0:
        raise ValueError(f"params={params}: must be positive")
    return 8.0 * stored_bytes / params


def relative_error(measured: float, predicted: float) -> float:
    """``|measured - predicted| / |predicted|`` (used to compare measured and predicted ratios)."""
    if predicted == 0:
        raise ValueError("predicted=0: relative error undefined")
    return abs(measured - predicted) / abs(predicted)


def growth_ratio(peak_bytes: float, baseline_bytes: float, model_bytes: float) -> float:
    """``(peak - baseline) / model_bytes``: memory a phase needed, in units of the fp32 model size.

    With ``baseline`` the process memory before the model was built, 1.0 means "the model and
    nothing else"; a quantizer that kept a second full copy would reach >= 2.0.
    """
    if model_bytes <= 0:
        raise ValueError(f"model_bytes={model_bytes}: must be positive")
    return (peak_bytes - baseline_bytes) / model_bytes
