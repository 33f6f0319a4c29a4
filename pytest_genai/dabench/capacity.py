"""Capacity limit (Paper B, B1: WSE-2 fails beyond 72 layers): the largest layer count that runs, and a memory model.

:func:`largest_fitting` searches for the largest ``n`` with ``fits(n)`` true, assuming ``fits`` is monotone (once a
count fails, every larger one fails): it doubles until the first failure, then bisects. :func:`predicted_peak_bytes`
is the memory model it is compared with (modeled, not measured): weights, gradients, AdamW state, the activations
autograd saves, and the largest transient buffers, each a pure function of the config.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping

from pytest_genai.dabench.config import DecoderConfig


@dataclasses.dataclass(frozen=True)
class CapacitySearch:
    """Result of a search: the largest passing count (0 if even ``start`` fails) and every probe made."""

    max_fitting: int
    probes: tuple[tuple[int, bool], ...]
    hit_limit: bool  # True when ``limit`` itself fitted, so the real capacity may be larger


def largest_fitting(fits: Callable[[int], bool], *, start: int = 1, limit: int = 4096,
                    guess: int | None = None) -> CapacitySearch:
    """Largest ``n`` in ``[start, limit]`` with ``fits(n)``, by doubling then bisection (O(log n) probes).

    ``guess`` (e.g. the memory model's answer): gallop from it instead, in steps of 1, 2, 4, ... up while counts
    fit or down while they fail, then bisect. The answer is the same for any guess (``fits`` being monotone); a good
    guess only spares the probes far from the capacity, which at large counts are the slow ones."""
    if start < 1 or limit < start:
        raise ValueError(f"need 1 <= start <= limit, got start={start}, limit={limit}")
    probes: list[tuple[int, bool]] = []

    def probe(n: int) -> bool:
        ok = bool(fits(n))
        probes.append((n, ok))
        return ok

    good: int | None
    bad: int | None
    if guess is not None and start < min(guess, limit):
        first = min(guess, limit)
        if probe(first):
            good, bad, step = first, None, 1
            while bad is None:
                if good == limit:
                    return CapacitySearch(limit, tuple(probes), True)
                n = min(limit, good + step)
                if probe(n):
                    good, step = n, step * 2
                else:
                    bad = n
        else:
            good, bad, step = None, first, 1
            while good is None:
                n = max(start, bad - step)
                if probe(n):
                    good = n
                elif n == start:
                    return CapacitySearch(0, tuple(probes), False)
                else:
                    bad, step = n, step * 2
    else:
        if not probe(start):
            return CapacitySearch(0, tuple(probes), False)
        good, bad = start, None
        while bad is None:
            if good == limit:
                return CapacitySearch(limit, tuple(probes), True)
            n = min(limit, good * 2)
            if probe(n):
                good = n
            else:
                bad = n
    while bad - good > 1:
        mid = (good + bad) // 2
        if probe(mid):
            good = mid
        else:
            bad = mid
    return CapacitySearch(good, tuple(probes), False)


# --- capacity from a vendor's compile / run outcomes ------------------------------------------------------------

#: Messages of vendor compilers and runtimes that mean "this size does not fit / did not build" (first kind found
#: wins). ``insufficient_capacity``: a Cerebras weight-streaming job that compiled ("Compile was successful") but whose
#: execute job the cluster could not place, its MemoryX nodes too small for the weights (``ClusterJobInitError``:
#: "cluster lacks requested capacity ... could only schedule 12 of 22 Weight{mem:89Gi}") -- it did not fit.
FAILURE_PATTERNS = (
    ("out_of_memory", re.compile(r"out of memory|\bOOM\b|insufficient (on-chip )?memory|not enough memory|"
                                 r"cannot fit|does not fit|memory (limit|capacity) exceeded|exceeds? (the )?"
                                 r"(available )?memory", re.I)),
    ("insufficient_capacity", re.compile(r"lacks requested capacity|insufficient (cluster )?capacity", re.I)),
    ("compile_failed", re.compile(r"compil\w* (has |was )?(failed|unsuccessful)|failed to compile|"
                                  r"compilation error|compile error", re.I)),
)
#: Of several lines of one kind, the one naming the memory it lacked is the reason ("Weight{mem:89Gi}").
_MEMORY_FIGURE = re.compile(r"\{mem:\s*\d", re.I)


def failure_reason(text: str) -> str | None:
    """``"<kind>: <the vendor's line>"`` when ``text`` (a compile or run log) reports a failure to fit or build: the
    first matching line, or of those the first that names the memory figures; a long line from where it matches."""
    lines = text.splitlines()
    for kind, pattern in FAILURE_PATTERNS:
        found = [(line, m) for line in lines if (m := pattern.search(line))]
        if found:
            line, m = next(((ln, m) for ln, m in found if _MEMORY_FIGURE.search(ln)), found[0])
            line = line.strip()
            if len(line) > 200:
                at = line.find(m.group(0))
                word = line.rfind(" ", 0, max(0, at - 8))  # from the word before the match, where there is one
                line = line[at if word < 0 else word + 1:][:400]
            return f"{kind}: {line}"
    return None


@dataclasses.dataclass(frozen=True)
class CapacityOutcome:
    """Capacity from attempts at several layer counts (Paper B: WSE-2 fails beyond 72 layers, IPU at 10).

    ``max_fitting``: the largest count that compiled (0 if none); ``first_failing``: the smallest count that failed
    above it (None if no larger attempt failed: the capacity may be larger); ``monotone``: no failure below a success.
    """

    max_fitting: int
    first_failing: int | None
    monotone: bool
    attempts: tuple[tuple[int, bool, str], ...]  # (layers, compiled, failure reason or "")


def capacity_from_outcomes(outcomes: Mapping[int, str | None]) -> CapacityOutcome:
    """``outcomes`` maps a layer count to None (compiled) or its failure reason; a failure is a result, not an error."""
    if not outcomes:
        raise ValueError("capacity_from_outcomes needs at least one attempt")
    ok = sorted(n for n, why in outcomes.items() if why is None)
    bad = sorted(n for n, why in outcomes.items() if why is not None)
    best = ok[-1] if ok else 0
    above = [n for n in bad if n > best]
    return CapacityOutcome(
        max_fitting=best,
        first_failing=above[0] if above else None,
        monotone=not any(n < best for n in bad),
        attempts=tuple((n, outcomes[n] is None, outcomes[n] or "") for n in sorted(outcomes)),
    )


def min_failing_layers(sweeps: Mapping[str, CapacityOutcome]) -> tuple[int, str] | None:
    """The smallest layer count at which some config of several sweeps failed, and that config (Paper B: IPU runs
    fail at 10 layers for some configs -- an existence claim over the configs); None when no config failed.

    A config's failing count is its ``first_failing`` (the smallest failure above its largest compiled count, or its
    smallest attempt when none compiled); a config with no failure says nothing about where it would fail.
    """
    failing = [(outcome.first_failing, group) for group, outcome in sweeps.items() if outcome.first_failing is not None]
    return min(failing) if failing else None


# --- memory model (modeled) -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MemoryBreakdown:
    """Modeled bytes of one step's high-water mark, by what holds them."""

    weights: int  # parameters and buffers (the causal mask)
    optimizer_state: int
    inputs: int  # the step's input (and, when training, the fixed output gradient)
    phase: str  # which phase sets the peak: forward, backward or optimizer
    phase_bytes: int  # activations, gradients and transients live at the peak of that phase

    @property
    def total(self) -> int:
        return self.weights + self.optimizer_state + self.inputs + self.phase_bytes


def _scores_elements(cfg: DecoderConfig) -> int:
    return cfg.batch * cfg.heads * cfg.seq_len * cfg.seq_len if cfg.attention == "math" else 0


def buffer_bytes(cfg: DecoderConfig) -> int:
    """The boolean causal mask each block registers for math attention (1 byte per S x S element)."""
    return cfg.layers * cfg.seq_len * cfg.seq_len if cfg.attention == "math" and cfg.causal else 0


def saved_activation_bytes_per_layer(cfg: DecoderConfig) -> int:
    """Tensors autograd keeps for one block's backward.

    Block input and LayerNorm-1 output (2), the QKV output that k and v view (3) plus the scaled q (1), the merged
    attention context (1), residual and LayerNorm-2 output (2): 9 x tokens x hidden; the FC1 output and the GELU
    output (2 x tokens x ffn); the softmax probabilities (math attention); LayerNorm statistics (fp32, 2 x 2 per token).
    The fused attention instead keeps its output and a log-sum-exp row per head (fp32).
    """
    e = cfg.bytes_per_element
    m, h, f = cfg.tokens, cfg.hidden, cfg.ffn_hidden
    stats = 2 * 2 * m * 4
    if cfg.attention == "math":
        attention = _scores_elements(cfg) * e
    else:
        attention = m * h * e + cfg.batch * cfg.heads * cfg.seq_len * 4
    return e * (9 * m * h + 2 * m * f) + attention + stats


def forward_transient_bytes(cfg: DecoderConfig) -> int:
    """Short-lived set inside one block's forward beyond what is saved: the pre-softmax scores beside the
    probabilities (math attention) or the block output being written while its input is alive."""
    e = cfg.bytes_per_element
    return e * max(_scores_elements(cfg), cfg.tokens * cfg.hidden) + e * cfg.tokens * cfg.hidden


def backward_transient_bytes(cfg: DecoderConfig) -> int:
    """Short-lived set inside one block's backward: the gradients of the probabilities and of the scores (math
    attention), or of the FFN's wide activations."""
    e = cfg.bytes_per_element
    return e * max(2 * _scores_elements(cfg), 2 * cfg.tokens * cfg.ffn_hidden)


def predicted_peak_bytes(cfg: DecoderConfig, *, foreach_optimizer: bool = False) -> MemoryBreakdown:
    """Modeled high-water mark of a steady-state step (after the first update has created the AdamW state).

    ``forward``: weights + the widest point of one block's forward (no autograd graph is kept).
    ``train``: weights + AdamW state (2 x weights, in the parameters' dtype) + the largest of three phases:
    end of forward (every block's saved activations + a forward transient), backward (either all saved activations
    with a backward transient, or -- when a block's gradients outweigh its activations -- all gradients with one
    block's activations), and the update (gradients + the update's temporaries: a full weights-sized buffer for
    the multi-tensor ``foreach`` AdamW used on accelerators, the largest parameter twice for the per-tensor loop).
    """
    e = cfg.bytes_per_element
    weights = cfg.params * e + buffer_bytes(cfg)
    m, h, f = cfg.tokens, cfg.hidden, cfg.ffn_hidden
    x = m * h * e
    if cfg.mode == "forward":
        # Input, LayerNorm output and QKV output (5 x m x h) with two S x S buffers, or the FFN's widest point.
        attn = e * (5 * m * h) + 2 * e * _scores_elements(cfg)
        ffn = e * (2 * m * h + 2 * m * f)
        return MemoryBreakdown(weights, 0, x, "forward", max(attn, ffn))
    grads = cfg.params * e
    saved = saved_activation_bytes_per_layer(cfg)
    biggest_param = max(h * f, 3 * h * h) * e
    phases = {
        "forward": cfg.layers * saved + forward_transient_bytes(cfg),
        "backward": max(cfg.layers * saved, grads + saved) + backward_transient_bytes(cfg),
        "optimizer": grads + (cfg.params * e if foreach_optimizer else 2 * biggest_param),
    }
    phase = max(phases, key=phases.__getitem__)
    return MemoryBreakdown(weights, 2 * cfg.params * e, 2 * x, phase, phases[phase])


def predicted_max_layers(
    cfg: DecoderConfig, budget_bytes: int, *, foreach_optimizer: bool = False, limit: int = 1 << 20
) -> int:
    """Largest layer count whose modeled peak fits ``budget_bytes`` (0 if one layer does not)."""
    if budget_bytes <= 0:
        raise ValueError(f"budget_bytes must be positive, got {budget_bytes!r}")

    def fits(n: int) -> bool:
        peak = predicted_peak_bytes(dataclasses.replace(cfg, layers=n), foreach_optimizer=foreach_optimizer)
        return peak.total <= budget_bytes

    return largest_fitting(fits, limit=limit).max_fitting


#: The share of a device's memory a planned step may take (the allocator's fragmentation and the runtime's own
#: workspaces take the rest).
MEMORY_HEADROOM = 0.9


def fit_problem(cfg: DecoderConfig, capacity_bytes: int | None, *, foreach_optimizer: bool = True) -> str | None:
    """Why ``cfg``'s step does not fit ``MEMORY_HEADROOM`` of a device with ``capacity_bytes`` by the memory model
    (:func:`predicted_peak_bytes`), a skip reason; None when it fits or the capacity is unknown."""
    if not capacity_bytes:
        return None
    peak = predicted_peak_bytes(cfg, foreach_optimizer=foreach_optimizer).total
    if peak <= MEMORY_HEADROOM * capacity_bytes:
        return None
    return (f"{cfg.id} does not fit: {peak / 2**30:.1f} GiB modeled peak (dabench.capacity) > {MEMORY_HEADROOM:.0%} "
            f"of the device's {capacity_bytes / 2**30:.1f} GiB; a larger card runs it")
