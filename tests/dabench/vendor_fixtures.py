"""Vendor outputs built to the real layouts (issue 12): our own files, shaped like the public examples.

Cerebras ``compile_report.txt``: the overall block, then one row per kernel with hierarchical names (a top-level
kernel per layer part, nested ``.compute_core`` / ``.lib_fc`` rows that are parts of it), ``--`` cells where the
compiler gives no estimate (most nested rows, some parents), embedding / layer-norm / loss / optimizer kernels, and
hundreds of rows. SambaTune ``section_report.csv``: one row per (section, chip) with ``--`` cells. Run logs as the
Model Zoo, SambaFlow apps and PopTorch print them.
"""
from __future__ import annotations

import csv
import io

KERNEL_HEADER = ("Kernel Name", "Samples/s", "Compute Samples/s", "Transmission Samples/s", "Active PEs",
                 "Compute Utilization")
RULE = "+" + "+".join("-" * 44 if i == 0 else "-" * 24 for i in range(6)) + "+"


def _row(cells) -> str:
    return "| " + " | ".join(f"{c:<42}" if i == 0 else f"{c:>22}" for i, c in enumerate(cells)) + " |"


def layer_rate(layer: int, part: str) -> float:
    """Samples/s of a top-level layer kernel: equal parts, the last layer's ffn slightly slower."""
    return 1000.0 if not (part == "ffn" and layer == 11) else 800.0


def compile_report(layers: int = 12, *, active_pes: str = "92%", parent_cells: bool = True,
                   overall_dashes: bool = True) -> str:
    """A report of ``layers`` GPT-2 blocks: attention<i> and ffn<i> kernels, each with nested parts.

    Every attention / ffn parent has a figure when ``parent_cells``; with ``parent_cells=False`` the parents of the
    ffn kernels are ``--`` and their figures must come from their parts. Parts' Active PEs are split 3:1 so that
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
        for part in ("attention", "ffn"):
            name = f"{part}{i}"
            rate = layer_rate(i, part)
            parent = [f"{rate:.1f}", f"{rate:.1f}", "--", "20,000", "85%"]
            if not parent_cells and part == "ffn":
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
