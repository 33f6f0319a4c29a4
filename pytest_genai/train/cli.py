"""``pytest-genai plan``: which data-parallel strategy fits a model on a device (DDP whenever it fits).

Example: ``pytest-genai plan --model llama-3.1-8b --device gaudi2 --world 8``. The device's memory comes from
``pytest_genai/devices/data/specs.toml`` (``mem_capacity_gb``, read as 10^9 bytes), or ``--capacity-gib``.
Every number printed is modeled (see :mod:`pytest_genai.train.planner`).
"""

from __future__ import annotations

import argparse
import json
import sys

from pytest_genai.train.archs import ARCHS, SCALES, get_arch
from pytest_genai.train.planner import ATTENTIONS, METHODS, PRECISIONS, STRATEGIES, Workload, min_world_size, plan

GIB = 2**30


def _capacity_bytes(args: argparse.Namespace) -> tuple[int, str]:
    if args.capacity_gib is not None:
        return int(args.capacity_gib * GIB), f"{args.capacity_gib:g} GiB (--capacity-gib)"
    from pytest_genai.devices.specs import get_spec

    spec = get_spec(args.device)
    if not spec.mem_capacity_gb:
        raise ValueError(f"device {args.device!r} has no known memory capacity in its spec; pass --capacity-gib")
    return int(spec.mem_capacity_gb * 1e9), f"{spec.mem_capacity_gb:g} GB (devices/data/specs.toml, {spec.generation})"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-genai plan",
        description="Predict per-device memory of DDP, ZeRO-2, FSDP and ZeRO-3 and recommend DDP whenever it fits "
                    "(Paper A, A2: sharding saves memory but costs throughput). All numbers are modeled.",
    )
    p.add_argument("--model", required=True, choices=sorted(ARCHS),
                   help="architecture (Paper A, A2; llama-7b: a vendor reference row's)")
    p.add_argument("--scale", default="full", choices=sorted(SCALES), help="architecture scale (default: full)")
    p.add_argument("--device", default="gaudi2", help="device generation from the specs table (default: gaudi2)")
    p.add_argument("--capacity-gib", type=float, help="device memory in GiB, instead of the spec's capacity")
    p.add_argument("--world", type=int, default=8, help="data-parallel devices (default: 8)")
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per device per step (default: 1)")
    p.add_argument("--seq-len", type=int, default=2048, help="tokens per sequence (default: 2048)")
    p.add_argument("--precision", default="mixed", choices=sorted(PRECISIONS),
                   help="mixed: bf16 weights/grads + fp32 master and Adam (16 B/param); amp; fp32")
    p.add_argument("--method", default="full", choices=METHODS, help="full fine-tune or LoRA adapters on q,k,v,o")
    p.add_argument("--lora-rank", type=int, default=8, help="LoRA rank (default: 8, optimum-habana's recipe)")
    p.add_argument("--attention", default="flash", choices=ATTENTIONS,
                   help="flash/sdpa keep no S×S scores; eager keeps them (default: flash)")
    p.add_argument("--usable", type=float, default=0.9, help="fraction of device memory usable (default: 0.9)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        arch = get_arch(args.model, args.scale)
        workload = Workload(arch, world=args.world, micro_batch=args.micro_batch, seq_len=args.seq_len,
                            precision=args.precision, method=args.method, lora_rank=args.lora_rank,
                            attention=args.attention)
        capacity, capacity_text = _capacity_bytes(args)
        result = plan(workload, capacity, args.usable)
    except ValueError as exc:
        print(f"pytest-genai plan: {exc}", file=sys.stderr)
        return 2
    min_worlds = {s: min_world_size(workload, s, capacity, args.usable) for s in STRATEGIES}
    if args.json:
        print(json.dumps({
            "model": arch.id, "params": arch.param_count(), "device": args.device, "capacity_bytes": capacity,
            "world": args.world, "workload": {k: v for k, v in vars(args).items() if k not in ("json",)},
            "estimates": [e.as_dict() for e in result.estimates],
            "fits": {s: result.fits(s) for s in STRATEGIES}, "min_world": min_worlds,
            "recommended": result.recommended, "reason": result.reason, "source": "modeled",
        }, indent=2))
        return 0
    from pytest_genai.tables import text_table

    print(f"{arch.id}: {arch.param_count() / 1e9:.2f} B parameters; {args.method} fine-tune, {args.precision}, "
          f"micro-batch {args.micro_batch} x {args.seq_len} tokens, {args.attention} attention")
    print(f"device {args.device}: {capacity_text}; usable {args.usable:.0%}; world {args.world}")
    print("per-device memory (modeled, GiB):")
    rows = []
    for e in result.estimates:
        rows.append([e.strategy, f"{e.weights / GIB:.2f}", f"{e.grads / GIB:.2f}", f"{e.optimizer / GIB:.2f}",
                     f"{e.activations / GIB:.2f}", f"{(e.transient + e.gathered) / GIB:.2f}", f"{e.total / GIB:.2f}",
                     "yes" if result.fits(e.strategy) else "no", min_worlds[e.strategy] or "-"])
    for line in text_table(["strategy", "weights", "grads", "optimizer", "activations", "buffers", "total",
                            "fits", "min world"], rows):
        print("  " + line)
    print(f"recommended: {result.recommended or 'none'} - {result.reason}")
    return 0
