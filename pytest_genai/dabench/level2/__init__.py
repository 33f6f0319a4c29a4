"""DABench-LLM Level 2 (Paper B, B2): inter-chip scaling and deployment sweeps.

Modules, one job each (importing this package imports nothing heavy):

* :mod:`.partition`       — pipeline partitioner: optimal vs equal-count split, stage LI, throughput bound (pure).
* :mod:`.knee`            — where batch-size gains plateau (pure).
* :mod:`.metrics`         — scaling ratio / efficiency, time shares, mixed-precision speedup (pure).
* :mod:`.config`          — frozen configs: :class:`~.config.ParallelConfig`, :class:`~.config.BatchSweepConfig`,
  :class:`~.config.PrecisionConfig` (the workload is Level 1's ``DecoderConfig``).
* :mod:`.comm`            — timed all-reduce / send / recv.
* :mod:`.tensor_parallel` — column / row parallel shards of the decoder block (Megatron-style).
* :mod:`.pipeline`        — stage layers, the GPipe schedule over send / recv, per-layer loads.
* :mod:`.strategies`      — what each rank measures for dp / tp / pp; :mod:`.checks` — float64 equivalence checks.
* :mod:`.worker`          — the torchrun entry point; :mod:`.run` — launch (the runtime's launcher) and summarize.
* :mod:`.deploy`          — in-process batch-size and precision sweeps on one device.
* :mod:`.results`         — what each Level 2 benchmark records: its run's summary as a ``Result`` (pure).
* :mod:`.artifacts`       — the dataflow chips' Level 2 from vendor run logs: TP 2 -> 4 chips, mixed precision
  over each vendor's baseline (pure comparisons over :mod:`pytest_genai.dabench.readers.runlog`).
"""
