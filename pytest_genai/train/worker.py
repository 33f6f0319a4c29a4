"""What every rank runs: ``torchrun ... -m pytest_genai.train.worker CONFIG.json``.

Each rank pins its CPU threads, joins the process group, trains, and reports per-rank measurements; rank 0
gathers them and writes the job's result JSON; every rank then leaves through
:func:`pytest_genai.runtime.rank.finish` (atomic result file, ``os._exit(0)`` after ``destroy_process_group()``).

Per rank: each step is timed between device synchronizations, batches are made before the clock starts.
Peak memory is the allocator's peak on CUDA; on the CPU it is the peak of live tensor bytes
(:mod:`pytest_genai.runtime.memtrack`) over model construction and the first two warm-up steps, which are then
not timed (the growth of the resident set is reported beside it).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any

from pytest_genai.train.config import ThroughputConfig, WikitextConfig, from_json
from pytest_genai.runtime.rank import finish, rank_env
from pytest_genai.runtime.memtrack import make_tracker
from pytest_genai.train.job import SCHEMA, synthetic_batch

MEMORY_PROBE_STEPS = 2
#: Imported once by the warm launcher's agent before it forks this module's ranks (pytest_genai.runtime.warm). Empty:
#: preloading peft and DeepSpeed saves seconds per job but lowered the launcher-vs-bare ratio, which matters more.
WARM_IMPORTS: tuple[str, ...] = ()


def current_rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def _device(kind: str, local_rank: int):
    from pytest_genai.devices.device import Device

    return Device(kind=kind, index=local_rank if kind != "cpu" else 0, name=kind, generation=kind)


def _setup(kind: str, env: dict[str, int]) -> None:
    from pytest_genai.runtime.procgroup import init_process_group

    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device kind {kind!r} has no torch training path here; Gaudi runs through pytest_genai.train.gaudi")
    from pytest_genai.runtime.threads import rank_threads

    init_process_group(kind, env["local_rank"], cpu_threads=rank_threads(env["local_world_size"]))


def _timed_steps(trainer: Any, device: Any, batches: list[Any]) -> tuple[list[float], list[Any]]:
    from pytest_genai.runtime.timing import timed

    step_s, losses = [], []
    for ids in batches:
        seconds, loss = timed(lambda: trainer.step(ids), sync=device.synchronize)
        step_s.append(seconds)
        losses.append(loss)
    return step_s, losses


def _mean_over_ranks(values: list[Any]) -> list[float]:
    """Per-step losses averaged over ranks (gloo has no AVG: sum, then divide)."""
    import torch
    import torch.distributed as dist

    t = torch.stack([v.float().reshape(()) for v in values])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [float(x) for x in (t / dist.get_world_size()).cpu()]


def attention_setup(kind: str, mode: str, family_has_sdpa: bool, precision: str = "fp32") -> tuple[str, str | None, str]:
    """(transformers attn_implementation, SDPA backend or None, label) for a device kind and attention mode.

    CUDA: SDPA restricted to its flash backend (bf16 under ``amp``; flash has no fp32 kernel, so fp32 runs use
    the memory-efficient fused kernel, labeled so) vs its math backend. CPU: SDPA (its CPU kernel — not Flash
    Attention, and labeled so) vs eager. Architectures without SDPA support cannot run ``fused``.
    """
    if mode == "fused" and not family_has_sdpa:
        raise ValueError("this architecture has no SDPA path in transformers; only attention='unfused' runs")
    if kind == "cuda":
        if mode == "fused":
            return ("sdpa", "flash", "sdpa-flash") if precision == "amp" else ("sdpa", "efficient", "sdpa-mem-efficient")
        return ("sdpa", "math", "sdpa-math") if family_has_sdpa else ("eager", None, "eager")
    return ("sdpa", None, "sdpa-cpu (not flash attention)") if mode == "fused" else ("eager", None, "eager")


@contextlib.contextmanager
def kv_heads_expanded() -> Iterator[None]:
    """transformers' SDPA path hands grouped-query attention to torch as ``enable_gqa=True`` (unexpanded key/value
    heads) when there is no mask; the memory-efficient kernel has no such mode, so an fp32 fused run of a GQA model
    (Llama 3.1) on CUDA stops with "No available kernel". Inside this block transformers
    expands the key/value heads first (its own ``repeat_kv``), which every kernel takes. Where a transformers version
    has no ``use_gqa_in_sdpa`` switch, nothing is changed."""
    try:
        from transformers.integrations import sdpa_attention
    except ImportError:
        yield
        return
    original = getattr(sdpa_attention, "use_gqa_in_sdpa", None)
    if original is None:
        yield
        return
    sdpa_attention.use_gqa_in_sdpa = lambda *args, **kwargs: False
    try:
        yield
    finally:
        sdpa_attention.use_gqa_in_sdpa = original


def sdpa_context(backend: str | None) -> contextlib.AbstractContextManager[Any]:
    """SDPA restricted to ``backend`` (None: torch's own choice); the memory-efficient kernel also gets expanded
    key/value heads (:func:`kv_heads_expanded`)."""
    if backend is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "math": SDPBackend.MATH}
    stack = contextlib.ExitStack()
    stack.enter_context(sdpa_kernel(backends[backend]))
    if backend == "efficient":
        stack.enter_context(kv_heads_expanded())
    return stack


def run_throughput(cfg: ThroughputConfig, kind: str, env: dict[str, int]) -> dict[str, Any]:
    import contextlib

    import torch

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model, supports_sdpa
    from pytest_genai.train.config import init_mode
    from pytest_genai.train.strategies import Context, build_and_wrap

    arch = get_arch(cfg.model, cfg.scale)
    impl, backend, label = attention_setup(kind, cfg.attention, supports_sdpa(arch), cfg.precision)
    device = _device(kind, env["local_rank"])
    overhead = None
    if kind == "cuda":  # the runtime's own workspaces, measured before the peak: part of it, in no tensor model
        from pytest_genai.runtime.memtrack import cuda_fixed_overhead_bytes

        overhead = cuda_fixed_overhead_bytes(device.torch_device)
    device.reset_peak_memory()
    rss0 = current_rss_bytes()
    ctx = Context(device_kind=kind, local_rank=env["local_rank"], precision=cfg.precision, lr=cfg.lr)
    batches = [synthetic_batch(cfg.seed, i, env["rank"], cfg.micro_batch, cfg.seq_len, arch.vocab, ctx.torch_device)
               for i in range(cfg.steps)]

    def sdpa():
        return sdpa_context(backend)

    # The memory probe covers model construction and the first two (untimed) warm-up steps: the peak comes in
    # the second step, when the optimizer states exist. CUDA's allocator keeps its own statistics.
    probe_steps = min(MEMORY_PROBE_STEPS, cfg.warmup)
    tracker = make_tracker() if kind == "cpu" else contextlib.nullcontext()
    dtypes = {"base_dtype": "float32", "adapter_dtype": None}
    if cfg.lora is not None:  # base frozen (bf16 on accelerators, fp32 on the CPU), adapters trainable
        from pytest_genai.train.lora import adapter_dtype_for, base_dtype_for

        dtypes = {"base_dtype": base_dtype_for(kind), "adapter_dtype": adapter_dtype_for(kind)}

    def build(where: str | None) -> Any:
        model = build_model(arch, impl, seed=cfg.seed, device=where)
        if cfg.lora is not None:
            from pytest_genai.train.lora import apply_lora

            model = apply_lora(model, cfg.lora, **dtypes)
        return model

    init = init_mode(cfg, kind)
    with tracker:
        t0 = time.perf_counter()
        trainer, model = build_and_wrap(cfg.strategy, build, ctx, cfg.micro_batch, deferred=init == "deferred",
                                        seed=cfg.seed, hidden=arch.hidden)
        setup_s = time.perf_counter() - t0
        # ZeRO-3 partitions each parameter (numel 0 on the rank after partitioning); ds_numel is its full size
        trainable = sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters() if p.requires_grad)
        with sdpa():
            probe_s, probe_losses = _timed_steps(trainer, device, batches[:probe_steps])
    with sdpa():
        step_s, losses = _timed_steps(trainer, device, batches[probe_steps:])
    peak = tracker.peak_bytes if kind == "cpu" else device.peak_memory_bytes()
    return {
        "step_s": probe_s + step_s,
        "losses": probe_losses + losses,
        "peak_memory_bytes": int(peak),
        "memory_measure": "live_tensor_bytes" if kind == "cpu" else "allocator_peak",
        "memory_probe_steps": probe_steps,
        "init": init,
        **({} if overhead is None else {"fixed_overhead_bytes": int(overhead)}),
        "rss_growth_bytes": peak_rss_bytes() - rss0,
        "setup_s": setup_s,
        "attention_impl": label,
        "params": arch.param_count(),
        "trainable_params": int(trainable),
        "method": cfg.method,
        **dtypes,
        "threads": torch.get_num_threads(),
    }


def _wikitext_blocks(cfg: WikitextConfig, tokenizer: Any, needed: int) -> Any:
    """The first ``needed`` blocks of ``seq_len`` tokens of the WikiText file (read with universal newlines)."""
    import torch

    ids: list[int] = []
    with open(cfg.text_path, encoding="utf-8") as fh:  # newline=None: CRLF copies read as LF
        for line in fh:
            ids.extend(tokenizer(line, add_special_tokens=False)["input_ids"])
            if len(ids) >= needed * cfg.seq_len:
                break
    if len(ids) < needed * cfg.seq_len:
        raise ValueError(f"{cfg.text_path} has {len(ids)} tokens; {needed} blocks of {cfg.seq_len} need more")
    return torch.tensor(ids[: needed * cfg.seq_len]).view(needed, cfg.seq_len)


def run_wikitext(cfg: WikitextConfig, kind: str, env: dict[str, int]) -> dict[str, Any]:
    """Fine-tune a pretrained model: held-out loss on the first ``eval_blocks`` blocks, before and after."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pytest_genai.train.strategies import Context, wrap

    device = _device(kind, env["local_rank"])
    device.reset_peak_memory()
    rss0 = current_rss_bytes()
    tokenizer = AutoTokenizer.from_pretrained(cfg.model_path)
    from pytest_genai.model_folder import dtype_kwargs

    model = AutoModelForCausalLM.from_pretrained(cfg.model_path, **dtype_kwargs(torch.float32))
    model.config.use_cache = False
    model.train()
    world = env["world_size"]
    blocks = _wikitext_blocks(cfg, tokenizer, cfg.eval_blocks + cfg.steps * world * cfg.micro_batch)
    ctx = Context(device_kind=kind, local_rank=env["local_rank"], precision="fp32", lr=cfg.lr)
    trainer = wrap(cfg.strategy, model, ctx, cfg.micro_batch)
    held_out = blocks[: cfg.eval_blocks].to(ctx.torch_device)

    def evaluate() -> float:
        return float(sum(trainer.forward_loss(held_out[i : i + 1]) for i in range(cfg.eval_blocks)) / cfg.eval_blocks)

    eval_start = evaluate()
    train = blocks[cfg.eval_blocks :]
    batches = []
    for step in range(cfg.steps):
        first = (step * world + env["rank"]) * cfg.micro_batch
        batches.append(train[first : first + cfg.micro_batch].to(ctx.torch_device))
    step_s, losses = _timed_steps(trainer, device, batches)
    eval_end = evaluate()
    peak = device.peak_memory_bytes() if kind != "cpu" else peak_rss_bytes() - rss0
    return {
        "step_s": step_s,
        "losses": losses,
        "eval_loss_start": eval_start,
        "eval_loss_end": eval_end,
        "peak_memory_bytes": int(peak),
        "memory_measure": "allocator_peak" if kind != "cpu" else "rss_growth",
        "params": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
    }


def agreed_problem(problem: str | None, env: dict[str, int], gather: Any = None) -> str | None:
    """Every node's memory problem with this run (``node N: why``; None when no node has one), the same on every
    rank: the nodes decide together whether to run, so none goes on alone into collectives the others never join.
    ``gather`` (default: ``torch.distributed.all_gather_object``) fills a list with every rank's object."""
    if gather is None:
        import torch.distributed as dist

        gather = dist.all_gather_object
    everyone: list[Any] = [None] * env["world_size"]
    gather(everyone, (env.get("group_rank", 0), problem))
    reasons = sorted({(node, why) for node, why in everyone if why})
    return "; ".join(f"node {node}: {why}" for node, why in reasons) or None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: torchrun ... -m pytest_genai.train.worker CONFIG.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    kind = spec.get("device", "cpu")
    cfg = from_json(spec["config"])
    env = rank_env("pytest_genai.train.worker")
    if kind == "hpu":
        from pytest_genai.train.gaudi import run_gaudi

        return run_gaudi(cfg, env)

    import torch.distributed as dist

    _setup(kind, env)
    if "node_problem" in spec:  # several nodes: they agree before anything is built
        why = agreed_problem(spec["node_problem"], {**env, "group_rank": int(os.environ.get("GROUP_RANK", "0"))})
        if why is not None:
            finish({"schema": SCHEMA, "skipped": why} if env["rank"] == 0 else None)
            return 0
    local = run_throughput(cfg, kind, env) if isinstance(cfg, ThroughputConfig) else run_wikitext(cfg, kind, env)
    local["losses"] = _mean_over_ranks(local.pop("losses"))
    gathered: list[Any] = [None] * env["world_size"]
    dist.all_gather_object(gathered, local)
    result = None
    if env["rank"] == 0:
        result = {
            "schema": SCHEMA,
            "config": cfg.to_json(),
            "device": kind,
            "world_size": env["world_size"],
            "losses": local["losses"],
            "ranks": [{k: v for k, v in r.items() if k != "losses"} for r in gathered],
        }
    finish(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
