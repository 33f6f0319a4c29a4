"""Vendor outputs built to the real layouts (so the readers are tested on what the SDKs write): our own files,
shaped like the public examples.

Cerebras ``compile_report.txt``: the overall block, then one row per kernel with hierarchical names (a top-level
kernel per layer part, nested ``.compute_core`` / ``.lib_fc`` rows that are parts of it), ``--`` cells where the
compiler gives no estimate (most nested rows, some parents), embedding / layer-norm / loss / optimizer kernels, and
hundreds of rows. SambaTune ``section_report.csv``: one row per (section, chip) with ``--`` cells. Run logs as the
Model Zoo, SambaFlow apps and PopTorch print them. PopVision reports as the objects ``pva.openReport`` returns: plain
dicts in the attribute layout libpva exposes (``compilation.target`` / ``compilation.tiles``; ``execution.runs[i]
.steps[j]`` with ``program.type.name`` and ``ipus[k].cycles``), turned into attribute objects by :func:`as_pva`; for a
subprocess, :func:`write_fake_pva` writes a ``pva`` module whose ``openReport`` loads such a dict from the file.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

KERNEL_HEADER = ("Kernel Name", "Samples/s", "Compute Samples/s", "Transmission Samples/s", "Active PEs",
                 "Compute Utilization")
RULE = "+" + "+".join("-" * 44 if i == 0 else "-" * 24 for i in range(6)) + "+"


def _row(cells) -> str:
    return "| " + " | ".join(f"{c:<42}" if i == 0 else f"{c:>22}" for i, c in enumerate(cells)) + " |"


def layer_rate(layer: int, part: str) -> float:
    """Samples/s of a top-level layer kernel: equal parts, the last layer's fc slightly slower."""
    return 1000.0 if not (part == "fc" and layer == 11) else 800.0


def compile_report(layers: int = 12, *, active_pes: str = "92%", parent_cells: bool = True,
                   overall_dashes: bool = True) -> str:
    """A report of ``layers`` GPT-2 blocks: attention<i> and fc<i> kernels (the names real reports give, and the rows
    the DABench-LLM authors take as subtasks), each with nested parts.

    Every attention / fc parent has a figure when ``parent_cells``; with ``parent_cells=False`` the parents of the
    fc kernels are ``--`` and their figures must come from their parts. Parts' Active PEs are split 3:1 so that
    summing every row would double-count the parents.
    """
    lines = [
        "Estimated Overall Performance",
        "-------------------------------",
        "Samples/s:                    800.0",
        "Compute Samples/s:            812.5",
        "Transmission Samples/s:       " + ("--" if overall_dashes else "900.0"),
        f"Active PEs:                   {active_pes}",
        "Compute Utilization:          71%",
        "",
        RULE,
        _row(KERNEL_HEADER),
        RULE,
        _row(["embedding", "5000.0", "5000.0", "--", "12,000", "40%"]),
        _row(["embedding.wte.lib_gather", "--", "--", "--", "12,000", "--"]),
    ]
    for i in range(layers):
        lines.append(_row([f"layer_norm{i}", "9000.0", "9000.0", "--", "1,000", "30%"]))
        for part in ("attention", "fc"):
            name = f"{part}{i}"
            rate = layer_rate(i, part)
            parent = [f"{rate:.1f}", f"{rate:.1f}", "--", "20,000", "85%"]
            if not parent_cells and part == "fc":
                parent = ["--", "--", "--", "--", "--"]
            lines.append(_row([name, *parent]))
            lines.append(_row([f"{name}.compute_core", "--", "--", "--", "15,000", "--"]))
            for sub in ("fc_q_proj", "fc_k_proj", "fc_v_proj") if part == "attention" else ("fc1", "fc2"):
                lines.append(_row([f"{name}.compute_core.{sub}.lib_fc", "--", "--", "--", "5,000", "88%"]))
            lines.append(_row([f"{name}.io", f"{rate:.1f}", "--", "--", "5,000", "--"]))
    lines += [
        _row(["ln_f", "9000.0", "9000.0", "--", "1,000", "31%"]),
        _row(["lm_head", "2500.0", "2500.0", "--", "30,000", "80%"]),
        _row(["loss_cross_entropy", "7000.0", "7000.0", "--", "2,000", "20%"]),
        _row(["adamw_optimizer", "4000.0", "4000.0", "--", "25,000", "60%"]),
        _row(["adamw_optimizer.weight_update.lib_axpy", "--", "--", "--", "25,000", "--"]),
        RULE,
        "",
        "Estimated Memory Usage",
        "----------------------",
        "Weights: 1.2 GB",
    ]
    return "\n".join(lines) + "\n"


SECTION_HEADER = ["section_id", "chip_id", "partition_id", "section type", "measured throughput, samples/s",
                  "measured latency (cycles)", "measured latency (sec)", "measured DDR read BW, GB/s",
                  "measured DDR write BW, GB/s", "measured DDR total BW, GB/s", "measured PMU count",
                  "measured PMU utilization", "measured PCU count", "measured PCU utilization"]


def section_report(rows) -> str:
    """CSV text of ``rows``: (section, chip, type, latency_s, ddr_total, pcu_percent) -- cells may be '--'."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(SECTION_HEADER)
    for section, chip, kind, latency, ddr, pcu in rows:
        cycles = "--" if latency == "--" else f"{float(latency) * 1.6e9:,.0f}"
        writer.writerow([section, chip, f"{section}, {chip}", kind, "--", cycles, latency, "--", "--", ddr, "120",
                         "20.0%", "320", pcu])
    return buf.getvalue()


def cerebras_log(global_rate: float, *, csx: int = 1, steps: int = 5) -> str:
    lines = ["2026-03-30 14:09:43,663 INFO:   Effective batch size is 8.",
             "2026-03-30 14:14:52,703 INFO:   Compile was successful!",
             f"2026-03-30 15:12:48,719 INFO:   Preparing to execute using {csx} CSX"]
    for step in range(1, steps + 1):
        rate = global_rate * (0.9 if step == 1 else 1.0)
        lines.append(f"2026-03-30 15:16:{10 + step:02d},873 INFO:   | Train Device=CSX, Step={step * 100}, "
                     f"Loss=9.3906, Rate={rate * 1.01:.2f} samples/sec, GlobalRate={rate:.2f} samples/sec")
    lines.append("2026-03-30 15:20:24,238 INFO:   Training completed successfully!")
    return "\n".join(lines) + "\n"


def poptorch_log(rates) -> str:
    lines = ["Graph compilation: 100%|##########| 100/100 [02:14<00:00]"]
    for step, rate in enumerate(rates, start=1):
        lines.append(f"Epoch: 0.{step:02d}/1 Step: {step}/{len(rates)} Lr: 0.000010 loss: 9.871 "
                     f"throughput: {rate:.2f} samples/sec")
    return "\n".join(lines) + "\n"


def sambaflow_log(samples_per_s: float) -> str:
    return ("[Info][SAMBA][Default] # Placing log files in pef/gpt2/gpt2.samba.log\n"
            "Epoch [1/1], Step [100/100], Loss: 6.1021\n"
            f"{{'e2e_train_time': 412.5, 'training_samples_per_sec': {samples_per_s:.2f}, 'final_loss': 6.1021}}\n"
            f"throughput: {samples_per_s:,.2f} samples/s\n")


# --- PopVision (pva) reports -----------------------------------------------------------------------------------------


def as_pva(obj):
    """Dicts as attribute objects (what pva's bindings hand back), lists kept as lists."""
    if isinstance(obj, dict):
        return SimpleNamespace(**{k: as_pva(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [as_pva(v) for v in obj]
    return obj


def graph_profile(*, ipus: int = 2, tiles_per_ipu: int = 8, bytes_per_tile: int = 638_976) -> dict:
    """The compilation part: a Bow-like target (scaled down to ``tiles_per_ipu`` tiles) with compute on 3 of 4
    tiles; every tile holds some memory (code, exchange buffers), only the compute tiles vertex state."""
    tiles = []
    for t in range(ipus * tiles_per_ipu):
        busy = t % 4 != 3
        tiles.append({"memory": {"total": {"excludingGaps": 400_000 if busy else 30_000,
                                           "includingGaps": 410_000 if busy else 31_000},
                                 "category": {"vertexInstanceState": {"total": 9_000 if busy else 0}}}})
    return {"compilation": {"target": {"numIPUs": ipus, "tilesPerIpu": tiles_per_ipu,
                                       "numTiles": ipus * tiles_per_ipu, "bytesPerTile": bytes_per_tile},
                            "tiles": tiles},
            "execution": {"runs": [], "steps": []}}  # a timed run: the graph profile only


def _step(kind: str, name: str, cycles) -> dict:
    return {"program": {"type": {"name": kind}, "name": name},
            "ipus": [{"cycles": c, "dataIn": 0, "dataOut": 0} for c in cycles]}


def execution_profile(*, compute: int, exchange: int, stream: int, layers: int = 4, ipus: int = 2, runs: int = 3,
                      warmup_stream: int = 0) -> dict:
    """A graph profile plus ``runs`` engine runs of a pipelined training step: per run, the input stream copy
    (Begin / Mid / End), then per layer on its IPU a sync, a tile-to-tile exchange and the on-tile compute, an
    inter-IPU exchange between pipeline stages, and the output copy. Per layer: ``compute`` OnTileExecute cycles,
    ``exchange`` DoExchange cycles; ``stream`` StreamCopyMid cycles per copy; syncs and Begin/End are waiting.
    The first run's copies take ``warmup_stream`` more cycles (a warm-up run the reader skips)."""
    report = graph_profile(ipus=ipus)
    all_runs = []
    for r in range(runs):
        extra = warmup_stream if r == 0 else 0
        steps = [_step("StreamCopyBegin", "inputs/begin", [900] + [0] * (ipus - 1)),
                 _step("StreamCopyMid", "inputs", [stream + extra] + [0] * (ipus - 1)),
                 _step("StreamCopyEnd", "inputs/end", [60] + [0] * (ipus - 1))]
        for layer in range(layers):
            on = layer * ipus // layers
            steps.append(_step("Sync", "Internal", [120] * ipus))
            steps.append(_step("DoExchange", f"layer{layer}/exchange",
                               [exchange if k == on else 0 for k in range(ipus)]))
            steps.append(_step("OnTileExecute", f"layer{layer}/matmul",
                               [compute if k == on else 0 for k in range(ipus)]))
            if layer + 1 < layers and (layer + 1) * ipus // layers != on:
                steps.append(_step("GlobalExchange", f"stage{on}_to_stage{on + 1}",
                                   [exchange // 4 if k in (on, on + 1) else 0 for k in range(ipus)]))
        steps += [_step("SyncAns", "External", [300] * ipus),
                  _step("StreamCopyBegin", "outputs/begin", [0] * (ipus - 1) + [700]),
                  _step("StreamCopyMid", "outputs", [0] * (ipus - 1) + [stream + extra]),
                  _step("StreamCopyEnd", "outputs/end", [0] * (ipus - 1) + [40])]
        all_runs.append({"steps": steps, "microseconds": {"start": r * 10_000, "end": r * 10_000 + 8_000}})
    report["execution"] = {"runs": all_runs, "steps": [s for run in all_runs for s in run["steps"]]}
    return report


FAKE_PVA_MODULE = '''"""Stand-in for the Poplar SDK's pva in tests: openReport loads a report dict written as JSON."""
import json
from types import SimpleNamespace


def _ns(obj):
    if isinstance(obj, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [_ns(v) for v in obj]
    return obj


def openReport(path, *debug_info):
    with open(path, encoding="utf-8") as f:
        return _ns(json.load(f))
'''


def write_pop(path: Path, report: dict) -> Path:
    """A ``profile.pop`` for the fake pva of :func:`write_fake_pva` (JSON of the report dict)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))
    return path


def write_fake_pva(folder: Path) -> Path:
    """A folder holding a ``pva`` module for a subprocess's PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pva.py").write_text(FAKE_PVA_MODULE)
    return folder


# --- sweeps: IPU capacity over several configs, Level-2 runs at several batch sizes ---------------------------------


def poptorch_compile_log(layers: int, *, fits: bool) -> str:
    """Console output of a PopTorch compile of ``layers`` blocks: the progress bar reaching 100%, or Poplar's
    out-of-memory error as poptorch raises it (the graph does not fit the tiles' memory)."""
    head = [f"[INFO] Building the decoder stack: {layers} layers",
            "[09:12:31.102] [poptorch:cpp] [info] Popart graph built, starting Poplar compilation"]
    if fits:
        return "\n".join(head + ["Graph compilation: 100%|##########| 100/100 [03:41<00:00]"]) + "\n"
    return "\n".join(head + [
        "Graph compilation:  38%|###8      | 38/100 [01:02<01:41]",
        "[09:13:33.870] [poptorch:cpp] [critical] poptorch.poptorch_core.Error: In poptorch/source/"
        "PoplarExecutor.cpp:1203: 'poplar_exception': Out of memory: Cannot fit all variable data onto one or "
        "more tiles. Exiting compilation.",
        "Traceback (most recent call last):",
        '  File "train.py", line 88, in <module>',
        "poptorch.Error: Out of memory on 312 tiles (largest overflow 81,204 bytes on tile 1187)",
    ]) + "\n"


def write_ipu_capacity_sweep(root: Path, capacity: dict[str, int | None],
                             counts=(2, 4, 6, 8, 10, 12, 16)) -> Path:
    """``root/ipu/capacity/L<n>-<config>/`` for every config and count: where ``n`` <= the config's capacity (None:
    every count fits) a compiled run -- its ``profile.pop`` at counts divisible by 4, else its log only; above it
    the out-of-memory log."""
    sweep = root / "ipu" / "capacity"
    for config, cap in capacity.items():
        for n in counts:
            folder = sweep / f"L{n}-{config}"
            folder.mkdir(parents=True)
            fits = cap is None or n <= cap
            if fits and n % 4 == 0:
                write_pop(folder / "profile.pop", graph_profile())
            else:
                (folder / "compile.log").write_text(poptorch_compile_log(n, fits=fits))
    return sweep


def write_batch_sweep(root: Path, kind: str, samples_per_s: dict[int, float], *, repeats: int = 5,
                      precision: str = "fp32", chips: int = 2, layers: int = 24) -> list[Path]:
    """Level-2 runs of ``kind`` at every batch of ``samples_per_s`` (``repeats`` each, folders ``r<i>-b<batch>``,
    a little spread between repeats; 5 is the fewest whose interval decides a claim): the WSE states batch, layers,
    systems and precision in its Model Zoo ``params.yaml``; RDU and IPU runs in ``run.toml``."""
    folders = []
    for batch, rate in samples_per_s.items():
        for r in range(repeats):
            value = rate * (1.0 + 0.004 * r)
            folder = root / kind / "level2" / f"r{r}-b{batch:04d}"
            folder.mkdir(parents=True)
            if kind == "wse":
                (folder / "run.log").write_text(cerebras_log(value, csx=chips))
                (folder / "params.yaml").write_text(
                    f"train_input:\n  batch_size: {batch}\nmodel:\n  num_hidden_layers: {layers}\n"
                    f"  mixed_precision: {precision == 'mixed'}\n  fp16_type: float16\nrunconfig:\n"
                    f"  num_csx: {chips}\n")
            else:
                log = sambaflow_log(value) if kind == "rdu" else poptorch_log([value / 50, value, value, value])
                (folder / "run.log").write_text(log)
                (folder / "run.toml").write_text(f'precision = "{precision}"\nchips = {chips}\nlayers = {layers}\n'
                                                 f"batch = {batch}\n")
            folders.append(folder)
    return folders


def write_compile_mode_sweep(root: Path, latencies: dict[str, dict[int, list[float]]],
                             config: str = "h768-a12-s1024-b8-bf16-train") -> Path:
    """``root/rdu/compile_modes/<MODE>/L<n>-<config>/section_report.csv`` per mode and layer count, from per-section
    latencies (seconds); each section runs on two chips (a row per chip, the second 2% faster) and one extra
    optimizer section has ``--`` cells everywhere but its id."""
    top = root / "rdu" / "compile_modes"
    for mode, by_layers in latencies.items():
        for layers, sections in by_layers.items():
            rows = []
            for i, latency in enumerate(sections):
                kind = "Forward" if i < len(sections) // 2 else "Backward"
                rows += [(i, 0, kind, f"{latency:.6f}", "150.0", "55.0%"),
                         (i, 1, kind, f"{latency * 0.98:.6f}", "140.0", "53.0%")]
            rows.append((len(sections), 0, "Optimizer", "--", "--", "--"))
            folder = top / mode.upper() / f"L{layers}-{config}"
            folder.mkdir(parents=True)
            (folder / "section_report.csv").write_text(section_report(rows))
    return top
