"""One real-library run of the Gaudi-stack leg, in a fresh process (the bridge reads PT_HPU_LAZY_MODE at first import,
and adapt_transformers_to_gaudi patches transformers for the whole process).

``python drive_gaudi.py train MODEL STRATEGY ATTENTION [lora]``: ``train.gaudi.run_gaudi`` through optimum-habana's
``GaudiTrainer`` with one gloo rank; the only change is where the trainer runs (``use_cpu`` instead of
``use_habana``, no ``use_lazy_mode``, gloo, fp32: the stand-in has no card). ``args MODEL STRATEGY``:
``GaudiTrainingArguments`` from the run's own arguments, unchanged. ``zero3``: a ZeRO-3 run's arguments, then
its model. ``layers``: the FSDP wrap class names in
Gaudi-adapted models. ``inc``: INC FP8 ``prepare``/``convert`` on a tiny Llama. ``mode``: the diffusion row's config
with the bridge's running mode. The last line is ``LEG-RESULT <json>``; an exception is reported there, not raised.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback


def _counters() -> dict:
    import habana_frameworks.torch.core as htcore
    from habana_frameworks.torch.hpex import kernels

    return {"fused_sdpa_calls": kernels.CALLS[0], "mark_steps": htcore.MARK_STEPS[0]}


def train(model: str, strategy: str, attention: str, lora: bool) -> dict:
    from pytest_genai.train import gaudi
    from pytest_genai.train.config import LoraSpec, ThroughputConfig

    planned = gaudi.training_arguments

    def on_the_cpu(cfg, out):  # the run's own arguments, with the trainer on the CPU (lazy mode needs use_habana)
        return {**planned(cfg, out), "use_habana": False, "use_cpu": True, "use_lazy_mode": False,
                "ddp_backend": "gloo", "bf16": False}

    gaudi.training_arguments = on_the_cpu
    result = os.path.join(tempfile.mkdtemp(prefix="genai-gaudi-leg-"), "result.json")
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=os.environ.get("GENAI_LEG_PORT", "29561"), PYTEST_GENAI_RESULT=result,
                      PYTEST_GENAI_RANK_RETURNS="1")
    cfg = ThroughputConfig(model=model, strategy=strategy, attention=attention, steps=3, warmup=2, seq_len=32,
                           micro_batch=1, lora=LoraSpec() if lora else None)
    gaudi.run_gaudi(cfg, {"rank": 0, "world_size": 1, "local_rank": 0})
    with open(result) as f:
        return {"result": json.load(f), **_counters()}


def args(model: str, strategy: str) -> dict:
    from optimum.habana import GaudiTrainingArguments

    from pytest_genai.train import gaudi
    from pytest_genai.train.config import ThroughputConfig

    cfg = ThroughputConfig(model=model, strategy=strategy, steps=3, warmup=2, seq_len=32, micro_batch=1)
    built = GaudiTrainingArguments(**gaudi.training_arguments(cfg, tempfile.mkdtemp(prefix="genai-gaudi-leg-")))
    return {"device": str(built.device)}


def zero3() -> dict:
    """``train.gaudi.arguments_then_model`` for a ZeRO-3 run: the real GaudiTrainingArguments (with
    GENAI_STANDIN_HPU=1 the stand-in says an HPU is there, so optimum-habana builds the DeepSpeed config; DeepSpeed
    runs its CPU accelerator), then the model, on one gloo rank; how many parameters zero.Init partitioned."""
    import torch.distributed as dist

    from pytest_genai.train import gaudi
    from pytest_genai.train.config import ThroughputConfig

    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=os.environ.get("GENAI_LEG_PORT", "29562"))
    dist.init_process_group("gloo", rank=0, world_size=1)
    cfg = ThroughputConfig(model="llama-3.1-8b", strategy="zero3", steps=3, warmup=2, seq_len=32, micro_batch=1)
    args, model = gaudi.arguments_then_model(cfg, tempfile.mkdtemp(prefix="genai-gaudi-leg-"))
    params = list(model.parameters())
    return {"device": str(args.device), "params": len(params),
            "partitioned": sum(hasattr(p, "ds_id") for p in params),
            "whole_numel": sum(int(getattr(p, "ds_numel", p.numel())) for p in params),
            "data_numel": sum(p.data.numel() for p in params)}


def layers() -> dict:
    """The decoder-layer class names of each FSDP model type after ``adapt_transformers_to_gaudi``, and the name the
    run's FSDP auto-wrap asks for."""
    from optimum.habana.transformers.modeling_utils import adapt_transformers_to_gaudi

    from pytest_genai.train.archs import get_arch
    from pytest_genai.train.build import build_model
    from pytest_genai.train.gaudi import GAUDI_DECODER_LAYERS, fsdp_layer_class

    adapt_transformers_to_gaudi()
    found = {}
    for model in ("llama-3.3-70b", "gemma-2-27b"):
        built = build_model(get_arch(model, "tiny"), "eager", seed=0)
        found[model] = {"wrap": fsdp_layer_class(built.config.model_type),
                        "classes": sorted({type(m).__name__ for m in built.modules()} & {
                            *GAUDI_DECODER_LAYERS.values(), "LlamaDecoderLayer", "Gemma2DecoderLayer"})}
    return {"layers": found}


def inc() -> dict:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from pytest_genai.quant.backends import inc_fp8

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"]
    ids = torch.randint(0, 128, (1, 16))

    def calibrate(m):
        with torch.no_grad():
            m(ids)

    inc_fp8(model, names, calibrate)
    return {"compute_paths": sorted({getattr(model.get_submodule(n), "compute_path", "") for n in names})}


def mode() -> dict:
    from pytest_genai.diffusion.config import DiffusionConfig
    from pytest_genai.diffusion.results import row_config
    from pytest_genai.runtime.hpu_mode import running_mode

    return {"config": row_config(DiffusionConfig(), "hpu", running_mode())}


def main(argv: list[str]) -> None:
    what, rest = argv[0], argv[1:]
    try:
        if what == "train":
            out = train(rest[0], rest[1], rest[2], rest[3:] == ["lora"])
        else:
            out = {"args": args, "zero3": zero3, "layers": layers, "inc": inc, "mode": mode}[what](*rest)
        out = {"ok": True, **out}
    except Exception as exc:  # the leg records where the real library stops
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}
    print("LEG-RESULT " + json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
