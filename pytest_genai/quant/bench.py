"""Quantizer benchmark support: the TinyLlama-1.1B architecture with random weights, the three
quantizers on it (pytest-genai, torchao, INC), and a peak-RSS probe run in a fresh process.

Random weights: timing and memory depend on shapes, not values, so no checkpoint is needed (and
none is downloaded); every result built here says "random-weights" in its id.

Peak memory: a fresh ``python -m pytest_genai.quant.bench`` interpreter imports everything, then
forks one child per quantizer; the child warms the quantizer up on a tiny model, reads its RSS
(baseline), builds the model, resets the kernel's RSS high-water mark (``/proc/self/clear_refs`` =
5), quantizes, and reads ``VmHWM``.
``peak_rss_growth_ratio = (VmHWM - baseline) / fp32 model bytes``: 1.0 is the model alone, a
second full copy would be >= 2.0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from pytest_genai import progress

# TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json (public model card): 22 layers, hidden 2048,
# FFN 5632, 32 heads with 4 KV heads (GQA), vocab 32000, untied LM head.
TINYLLAMA_1_1B = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                      num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, rms_norm_eps=1e-5,
                      rope_theta=10000.0, tie_word_embeddings=False)
QUANTIZERS = ("pytest-genai", "torchao", "inc")


@dataclass(frozen=True)
class ArchConfig:
    """TinyLlama-1.1B shapes; ``layers``/``vocab`` may be cut for a quick CI case (widths are kept)."""

    layers: int = 22
    vocab: int = 32000
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.layers, int) or not 1 <= self.layers <= 22:
            raise ValueError(f"ArchConfig.layers={self.layers!r}: use 1..22 (TinyLlama-1.1B has 22)")
        if not isinstance(self.vocab, int) or self.vocab < 64:
            raise ValueError(f"ArchConfig.vocab={self.vocab!r}: use an int >= 64 (TinyLlama-1.1B has 32000)")

    @property
    def full(self) -> bool:
        return self.layers == 22 and self.vocab == 32000

    @property
    def id(self) -> str:
        cut = "" if self.full else f"-{self.layers}layers-vocab{self.vocab}"
        return f"tinyllama-1.1b-arch{cut}-random-weights"


def build_random_model(arch: ArchConfig, hidden: int | None = None, *, like=None):
    """A LlamaForCausalLM with TinyLlama-1.1B shapes and seeded N(0, 0.02) weights (norms = 1).

    Built on the meta device and filled in place, so construction never holds two copies.
    ``like``: a state dict to copy the weights from instead of drawing them (a faster fresh copy).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    shape = dict(TINYLLAMA_1_1B, num_hidden_layers=arch.layers, vocab_size=arch.vocab)
    if hidden is not None:  # warm-up only: same architecture, tiny widths
        shape.update(hidden_size=hidden, intermediate_size=2 * hidden, num_attention_heads=4, num_key_value_heads=2)
    cfg = LlamaConfig(**shape)
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg)
    model = model.to_empty(device="cpu").eval()
    g = torch.Generator().manual_seed(arch.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if like is not None:
                p.copy_(like[name])
            elif p.dim() == 1:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=g)
        for module in model.modules():  # non-persistent rotary buffers were left empty: rebuild on the CPU
            if "inv_freq" in dict(module.named_buffers(recurse=False)):
                fresh = type(module)(config=module.config)
                for bname, buf in fresh.named_buffers(recurse=False):
                    module.register_buffer(bname, buf, persistent=False)
    return model


class ModelFactory:
    """Fresh identical models of ``arch``: drawn once, then copied (cheaper than drawing again)
    while the pristine copy stays under ``cache_limit_bytes``; drawn every time above it."""

    def __init__(self, arch: ArchConfig, cache_limit_bytes: int = 2 << 30):
        self.arch = arch
        self.cache_limit_bytes = cache_limit_bytes
        self._pristine = None

    def __call__(self):
        if self._pristine is not None:
            return build_random_model(self.arch, like=self._pristine)
        model = build_random_model(self.arch)
        nbytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
        if nbytes <= self.cache_limit_bytes:
            self._pristine = {k: v.detach().clone() for k, v in model.named_parameters()}
        return model


def run_quantizer(name: str, model, *, sensitive_fraction: float = 0.25, tiers=("bf16", "int8")):
    """Quantize ``model`` in place with quantizer ``name``; returns the plan used.

    pytest-genai: analyze sensitivity + plan (``tiers``, ``sensitive_fraction``) + real quantize.
    torchao / inc: int8 weight-only (per channel) on the same eligible linears, no analysis.
    """
    from .apply import quantize_model
    from .config import PlanConfig, SensitivityConfig
    from .plan import make_plan, uniform_plan
    from .sensitivity import analyze_sensitivity

    if name == "pytest-genai":
        res = analyze_sensitivity(model, SensitivityConfig())
        plan = make_plan(res, PlanConfig(tiers=tuple(tiers), sensitive_fraction=sensitive_fraction))
        quantize_model(model, plan, "real", backend="native")
        return plan
    if name in ("torchao", "inc"):
        plan = uniform_plan(model, "int8")
        quantize_model(model, plan, "real", backend=name)
        return plan
    raise ValueError(f"quantizer {name!r}: use one of {QUANTIZERS}")


def time_interleaved(runners: dict, fresh, rounds: int, clock=None, *, policy=None, decided=None,
                     outcome: list | None = None) -> tuple[dict[str, list[float]], dict]:
    """Seconds of each runner (``name -> run(model)``) on a fresh model per call, ``rounds`` rounds interleaved
    with the order rotated every round (a slow spell of a shared machine hits all alike); the model build is never
    timed. Returns the per-round seconds and, per name, the last model and what its run returned. ``clock``: the
    timer (default ``time.perf_counter``, wall time; tests of the loop itself pass a CPU-time clock).

    ``policy`` (:class:`pytest_genai.runtime.rounds.RoundsPolicy`) ``auto`` adds whole rotations while
    ``decided(seconds)`` is false and its budget allows; the loop's
    :class:`~pytest_genai.runtime.rounds.RoundsOutcome` is appended to ``outcome`` when one is given."""
    import gc
    import time

    from pytest_genai.runtime.rounds import run_rounds

    clock = time.perf_counter if clock is None else clock

    names = list(runners)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    last: dict = {}
    shown = progress.steps(range(rounds), f"timing {', '.join(names)} interleaved", unit="rounds")
    ticks = iter(shown)

    def one(r: int) -> None:
        next(ticks, None)
        for name in names[r % len(names):] + names[:r % len(names)]:
            model = fresh()
            gc.collect()
            t0 = clock()
            out = runners[name](model)
            seconds[name].append(clock() - t0)
            last[name] = (model, out)
            del model
            gc.collect()

    test = None if decided is None else (lambda: decided(seconds))
    done = run_rounds(one, rounds, policy, test, cycle=len(names), clock=clock)
    for _ in ticks:  # close the progress line
        pass
    if outcome is not None:
        outcome.append(done)
    return seconds, last


def round_ratios(seconds: dict[str, list[float]], num: str, den: str) -> list[float]:
    """Per round: ``num``'s seconds over ``den``'s (both timed in the same round)."""
    return [a / b for a, b in zip(seconds[num], seconds[den])]


def warm_up(name: str) -> None:
    """Run the quantizer once on a tiny model of the same architecture (imports, lazy initialisation)."""
    run_quantizer(name, build_random_model(ArchConfig(layers=1, vocab=64), hidden=64))


def _status_kib(key: str) -> int | None:
    try:
        text = open("/proc/self/status").read()
    except OSError:
        return None
    m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) if m else None


def reset_peak_rss() -> bool:
    """Reset the process's RSS high-water mark (Linux); False if the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@dataclass
class MemoryProbe:
    quantizer: str
    arch: str
    model_fp32_bytes: int
    baseline_rss_bytes: int
    model_rss_bytes: int
    peak_rss_bytes: int
    peak_rss_growth_ratio: float  # (peak - baseline) / model fp32 bytes
    quantize_extra_rss_ratio: float  # (peak - RSS with the model built) / model fp32 bytes
    quantize_seconds: float
    compression_ratio: float
    method: str


def probe_memory(quantizer: str, arch: ArchConfig, threads: int = 1) -> MemoryProbe:
    """Measure (in this process) the peak RSS growth of quantizing a fresh ``arch`` model."""
    import gc

    import torch

    from .metrics import growth_ratio
    from .storage import compression_report

    torch.set_num_threads(threads)
    warm_up(quantizer)
    gc.collect()
    baseline = _status_kib("VmRSS") * 1024
    model = build_random_model(arch)
    fp32 = 4 * sum(t.numel() for t in model.state_dict().values())
    gc.collect()
    if not reset_peak_rss():
        raise RuntimeError("cannot reset the RSS high-water mark (/proc/self/clear_refs); peak would include the build")
    with_model = _status_kib("VmRSS") * 1024
    t0 = time.perf_counter()
    run_quantizer(quantizer, model)
    seconds = time.perf_counter() - t0
    # The kernel updates VmHWM lazily (on unmaps), so it can lag VmRSS: the peak is at least the RSS at the start
    # and at the end of the quantization.
    peak = max(_status_kib("VmHWM") * 1024, _status_kib("VmRSS") * 1024, with_model)
    ratio = compression_report(fp32, model, with_file=False)["compression_ratio"]
    return MemoryProbe(quantizer, arch.id, fp32, baseline, with_model, peak, growth_ratio(peak, baseline, fp32),
                       (peak - with_model) / fp32, seconds, ratio, "VmHWM after clear_refs=5, in a child forked from a fresh interpreter after imports")


def _import_for(quantizer: str) -> None:
    import transformers.models.llama.modeling_llama  # noqa: F401

    if quantizer == "torchao":
        import torchao.quantization  # noqa: F401
    elif quantizer == "inc":
        import neural_compressor.torch.quantization  # noqa: F401


def probe_memory_forked(quantizers, arch: ArchConfig, threads: int = 1) -> dict[str, MemoryProbe]:
    """``probe_memory`` for each quantizer in its own child, forked from this process after the
    imports (the children share nothing but the imported modules; one interpreter start for all)."""
    for q in quantizers:
        _import_for(q)
    out = {}
    for q in quantizers:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(read_fd)
            code = 0
            try:
                payload = json.dumps(asdict(probe_memory(q, arch, threads)))
            except BaseException as exc:  # report, never return into the parent's code
                payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
                code = 1
            with os.fdopen(write_fd, "w") as f:
                f.write(payload)
            os._exit(code)
        os.close(write_fd)
        with os.fdopen(read_fd) as f:
            payload = f.read()
        _, status = os.waitpid(pid, 0)
        data = json.loads(payload) if payload else {"error": f"child exited with status {status}"}
        if "error" in data:
            raise RuntimeError(f"memory probe of {q} failed: {data['error']}")
        out[q] = MemoryProbe(**data)
    return out


def probe_memory_subprocess(quantizers, arch: ArchConfig, threads: int = 1,
                            timeout: float = 1800) -> dict[str, MemoryProbe]:
    """Peak RSS of each quantizer, measured in a fresh interpreter (clean baseline), one forked
    child per quantizer; RuntimeError with the interpreter's stderr on failure."""
    cmd = [sys.executable, "-m", "pytest_genai.quant.bench", "--quantizer", ",".join(quantizers),
           "--layers", str(arch.layers), "--vocab", str(arch.vocab), "--seed", str(arch.seed),
           "--threads", str(threads)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or len(lines) != len(quantizers):
        raise RuntimeError(f"memory probe {' '.join(cmd[2:])} failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    probes = [MemoryProbe(**json.loads(ln)) for ln in lines]
    return {p.quantizer: p for p in probes}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_genai.quant.bench",
                                description="peak RSS of quantizers on a TinyLlama-1.1B-shaped random model")
    p.add_argument("--quantizer", required=True, help=f"comma-separated, from {', '.join(QUANTIZERS)}")
    p.add_argument("--layers", type=int, default=22)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    quantizers = [q for q in args.quantizer.split(",") if q]
    unknown = [q for q in quantizers if q not in QUANTIZERS]
    if unknown or not quantizers:
        p.error(f"--quantizer {args.quantizer!r}: use names from {', '.join(QUANTIZERS)}")
    probes = probe_memory_forked(quantizers, ArchConfig(args.layers, args.vocab, args.seed), args.threads)
    for q in quantizers:
        print(json.dumps(asdict(probes[q])), flush=True)
    return 0


if __name__ == "__main__":
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    sys.exit(main())
