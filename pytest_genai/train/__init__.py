"""Fine-tuning throughput (Paper A, A2): DDP vs FSDP vs DeepSpeed ZeRO, launched with torchrun.

Modules, one job each (none imports torch at import time):

- ``archs``      the paper's model architectures as data, scaled variants, parameter counts
- ``build``      an architecture as a transformers model (random weights; meta device for counting)
- ``flops``      analytic training FLOPs, cross-checked with torch's flop counter
- ``planner``    per-device memory of each strategy and the DDP-when-it-fits recommendation
- ``lora``       LoRA adapters as optimum-habana's ``run_lora_clm.py`` builds them (a frozen spec; peft)
- ``fit_table``  which paper-scale runs fit which accelerator (the planner's table in docs/finetune.md)
- ``metrics``    tokens/s, samples/s, MFU, step-time statistics (pure functions)
- ``config``     the benchmark configurations (frozen dataclasses with an ``id``)
- ``strategies`` DDP, FSDP2 and DeepSpeed ZeRO-2/3 wrappers behind one interface
- ``worker``     what each rank runs (``python -m pytest_genai.train.worker``)
- ``job``        what the torch worker and the Gaudi path share: the result schema and the synthetic batches
- ``run``        launch a configuration and summarize rank 0's result; a per-session run cache
- ``gaudi``      the same strategies through optimum-habana's ``GaudiTrainer`` (only with ``habana_frameworks``)
- ``cli``        ``pytest-genai plan``

The launcher, rank helpers, process groups and the CPU memory tracker come from :mod:`pytest_genai.runtime`.
"""
