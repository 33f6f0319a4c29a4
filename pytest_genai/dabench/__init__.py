"""DABench-LLM (Paper B): Level 1 (B1) intra-chip profiling of a GPT-style decoder-block stack, and Level 2 (B2,
:mod:`.level2`) inter-chip scaling of the same workload.

Modules, each with one job (importing this package imports nothing heavy):

* :mod:`.config`     — :class:`DecoderConfig` (frozen) and the per-device default sweeps.
* :mod:`.counts`     — analytic FLOPs and minimal bytes per op, per op class (pure).
* :mod:`.roofline`   — intensity, attainable performance, ridge point, bound, efficiency (pure).
* :mod:`.balance`    — the load-imbalance metric LI (pure).
* :mod:`.allocation` — resource allocation ratio from CPU times or CUDA kernel records (pure).
* :mod:`.capacity`   — the largest-layer-count bisection, capacity from vendor compile outcomes, the memory model (pure).
* :mod:`.model`      — the torch decoder stack built from a config (torch imported inside).
* :mod:`.ceilings`   — measured matmul and copy ceilings (torch imported inside).
* :mod:`.fit`        — one capacity probe: does a stack of n layers run (out-of-memory caught, memory freed).
* :mod:`.kernels`    — CUDA kernel records from a torch.profiler trace (torch imported inside).
* :mod:`.vendor`     — the workload through Cerebras / SambaNova / Graphcore SDKs where present; their outputs
  (profiles, capacity sweeps) and artifact devices where not.
* :mod:`.readers`    — vendor profile readers (Cerebras compile report, SambaTune section report, PopVision) and
  Level-2 run-log readers.
* :mod:`.level1`     — runs one config end to end and returns the metrics the benchmark records.
* :mod:`.level2`     — Level 2 (B2): inter-chip scaling and deployment sweeps of the same decoder workload.

Timing and the CPU memory tracker come from :mod:`pytest_genai.runtime`.
"""
