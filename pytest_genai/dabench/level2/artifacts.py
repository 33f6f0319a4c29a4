"""Level 2 on the dataflow chips from their outputs: TP scaling and mixed-precision gains from vendor run logs.

Runs are read from ``<profiles dir>/<kind>/level2/<run name>/`` (:mod:`pytest_genai.dabench.readers.runlog`); the
comparisons are pure functions of the runs read.

Mixed-precision baseline per vendor (Paper B reports "+34.3% on RDU, +22.0% on IPU, +10.7% on WSE" without naming
the baseline in the summary this project follows):

* RDU, IPU: fp32 training -- both run fp32, so the gain is mixed over fp32 (the usual meaning).
* WSE: fp32 training is not possible (the Cerebras software forces mixed precision: 16-bit weights and activations
  with fp32 accumulation and master weights), so the only baseline a WSE user can run is a 16-bit run without the
  mixed-precision flag (Model Zoo ``mixed_precision: False``, fp16). Ours: mixed over fp16. Whether the paper's 10.7%
  is against fp16 is our reading, not the paper's statement (claim note says so).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from pytest_genai.dabench.readers.runlog import VendorRunLog, read_run

LEVEL2_DIR = "level2"

#: (baseline precision, why) per kind, for the mixed-precision gain.
MIXED_PRECISION_BASELINE = {
    "rdu": ("fp32", "fp32 training on the same chips and layers (SambaFlow runs fp32)"),
    "ipu": ("fp32", "fp32 training on the same IPUs and layers (PopTorch runs fp32)"),
    "wse": ("fp16", "fp16 training without mixed precision (Model Zoo mixed_precision: False): fp32 training is not "
                    "possible on the WSE, the software forces mixed precision"),
}

#: Which files a test needs per kind, and the vendor commands that produce them (for skip messages and docs).
HOWTO = {
    "wse": "Cerebras Model Zoo GPT-2 runs (e.g. `python run.py CSX --mode train --params params.yaml`): per run, "
           "its console output as run.log, its params.yaml, and run.toml with precision/chips/layers the log lacks",
    "rdu": "SambaFlow GPT-2 runs (`python <app>.py compile ...` then `python <app>.py run ... --measure-performance` "
           "on 2 and on 4 RDUs, fp32 and mixed): per run, its console output as run.log and run.toml "
           "(precision, chips, layers)",
    "ipu": "PopTorch GPT-2 runs of Graphcore's examples (`python train_gpt2.py ...`, fp32 and half/mixed, same "
           "layers-per-IPU layout): per run, its console output as run.log and run.toml (precision, chips, layers)",
}

#: The batch sweep per kind: the same run at several batch sizes (for skip messages and docs).
BATCH_HOWTO = {
    "wse": "the Model Zoo GPT-2 run at rising train_input.batch_size in params.yaml, including two or more at "
           "batch >= 200 (e.g. 50, 100, 200, 400, 800)",
    "rdu": "the SambaFlow GPT-2 app run with --measure-performance at rising batch sizes (compile and run with "
           "`-b N` for each), the same chips, precision and layers; batch = N in run.toml",
    "ipu": "the PopTorch GPT-2 run at rising batch sizes (micro-batch or gradient accumulation), the same "
           "layers-per-IPU layout and precision; batch = the global batch in run.toml",
}


class ArtifactsMissing(LookupError):
    """The runs a comparison needs are not in the profiles folder; the message says which files to provide."""


def read_runs(root: str | Path, kind: str) -> list[VendorRunLog]:
    """Every run folder under ``<root>/<kind>/level2/`` (sorted by name)."""
    folder = Path(root) / kind / LEVEL2_DIR
    if not folder.is_dir():
        raise ArtifactsMissing(f"no {kind} Level-2 runs: expected {folder}/<run name>/ folders from {HOWTO[kind]}")
    return [read_run(p, kind, root) for p in sorted(folder.iterdir()) if p.is_dir()]


@dataclasses.dataclass(frozen=True)
class RunComparison:
    """``value`` = median samples/s of ``runs`` over median samples/s of ``baselines`` (same settings but the one
    compared); ``rounds``: the ratio of the i-th run to the i-th baseline (by folder name) when a setting was
    repeated -- the spread timing claims are judged on; one run per setting gives one round (inconclusive)."""

    value: float
    runs: tuple[VendorRunLog, ...]
    baselines: tuple[VendorRunLog, ...]
    rounds: tuple[float, ...]

    @property
    def run(self) -> VendorRunLog:
        return self.runs[0]

    @property
    def baseline(self) -> VendorRunLog:
        return self.baselines[0]


def _compare(runs: Sequence[VendorRunLog], pick, base, what: str) -> RunComparison:
    """Runs selected by ``pick`` against those selected by ``base`` with the same other settings (key, whose last
    item is the layer count; a batch sweep in the same folder is never mixed into one side: batch is in the key)."""
    import statistics

    ok = [r for r in runs if r.samples_per_s]
    groups: dict[tuple, tuple[list[VendorRunLog], list[VendorRunLog]]] = {}
    for r in ok:
        for side, select in ((0, pick), (1, base)):
            if (key := select(r)) is not None:
                groups.setdefault(key, ([], []))[side].append(r)
    matched = {k: v for k, v in groups.items() if v[0] and v[1]}
    if not matched:
        raise ArtifactsMissing(what)
    # The deepest stack is the one Paper B's claims are about when several were run.
    a, b = matched[max(matched, key=lambda k: (k[-1], k))]
    a, b = sorted(a, key=lambda r: r.name), sorted(b, key=lambda r: r.name)
    value = statistics.median(r.samples_per_s for r in a) / statistics.median(r.samples_per_s for r in b)
    rounds = tuple(x.samples_per_s / y.samples_per_s for x, y in zip(a, b))
    return RunComparison(value, tuple(a), tuple(b), rounds)


def tp_scaling_ratio(runs: Sequence[VendorRunLog], *, low: int = 2, high: int = 4) -> RunComparison:
    """samples/s at ``high`` chips over samples/s at ``low`` chips, same precision and layers (B2: RDU TP 2 -> 4)."""
    return _compare(runs, lambda r: (r.precision, r.batch or 0, r.layers) if r.chips == high else None,
                    lambda r: (r.precision, r.batch or 0, r.layers) if r.chips == low else None,
                    f"no successful runs at both {low} and {high} chips with the same precision and layers")


def mixed_precision_speedup(runs: Sequence[VendorRunLog], kind: str) -> RunComparison:
    """samples/s of mixed-precision runs over the vendor's baseline runs, same chips and layers."""
    baseline = MIXED_PRECISION_BASELINE[kind][0]
    return _compare(runs, lambda r: (r.chips, r.batch or 0, r.layers) if r.precision == "mixed" else None,
                    lambda r: (r.chips, r.batch or 0, r.layers) if r.precision == baseline else None,
                    f"no successful mixed and {baseline} runs with the same chips and layers")


# --- batch sweeps (B2: near-linear gains on RDU and IPU; WSE gains plateau after batch 200) -------------------------

#: Paper B: "WSE gains plateau after batch 200".
PLATEAU_FROM_BATCH = 200


@dataclasses.dataclass(frozen=True)
class BatchSweep:
    """samples/s against batch for runs equal in all but the batch (precision, chips, layers).

    ``samples_per_s``: the median over the runs at each batch; ``rounds``: per round, the i-th run (by folder name) of
    every batch -- as many rounds as the least-repeated batch has runs."""

    batches: tuple[int, ...]
    samples_per_s: tuple[float, ...]
    rounds: tuple[tuple[float, ...], ...]
    runs: tuple[VendorRunLog, ...]


def batch_sweep(runs: Sequence[VendorRunLog]) -> BatchSweep:
    """The batch sweep among ``runs``: the (precision, chips, layers) group with the most batch sizes (ties: the
    deepest stack). Runs that failed or state no batch (``run.toml`` ``batch``; Model Zoo ``train_input.batch_size``)
    are left out."""
    import statistics

    groups: dict[tuple, dict[int, list[VendorRunLog]]] = {}
    for r in runs:
        if r.samples_per_s and r.batch:
            groups.setdefault((r.precision, r.chips, r.layers), {}).setdefault(r.batch, []).append(r)
    swept = {k: v for k, v in groups.items() if len(v) >= 2}
    if not swept:
        raise ArtifactsMissing("no successful runs at two or more batch sizes with the same precision, chips and "
                               "layers (batch from run.toml, or params.yaml on the WSE)")
    by_batch = swept[max(swept, key=lambda k: (len(swept[k]), k[-1], k))]
    batches = tuple(sorted(by_batch))
    ordered = [sorted(by_batch[b], key=lambda r: r.name) for b in batches]
    medians = tuple(statistics.median(r.samples_per_s for r in at) for at in ordered)
    rounds = tuple(tuple(at[i].samples_per_s for at in ordered) for i in range(min(len(at) for at in ordered)))
    return BatchSweep(batches, medians, rounds, tuple(r for at in ordered for r in at))


def batch_scaling_efficiency(batches: Sequence[int], samples_per_s: Sequence[float]) -> float:
    """(samples/s at the largest batch / at the smallest) / (largest batch / smallest): 1 = throughput grows in
    proportion to the batch (linear gain), 1 / (batch ratio) = no gain at all."""
    lo, hi = batches.index(min(batches)), batches.index(max(batches))
    if batches[hi] == batches[lo]:
        raise ValueError(f"a batch sweep needs two batch sizes, got {list(batches)}")
    return (samples_per_s[hi] / samples_per_s[lo]) / (batches[hi] / batches[lo])


def gain_per_doubling_from(batches: Sequence[int], samples_per_s: Sequence[float],
                           from_batch: int = PLATEAU_FROM_BATCH) -> float:
    """samples/s gain per doubling of the batch from the smallest swept batch >= ``from_batch`` to the largest:
    ``(T_top / T_base) ** (1 / log2(B_top / B_base))``. 1 = a plateau, 2 = linear gain."""
    import math

    above = sorted((b, t) for b, t in zip(batches, samples_per_s) if b >= from_batch)
    if len(above) < 2:
        raise ArtifactsMissing(f"no runs at two or more batch sizes >= {from_batch} (swept: {sorted(batches)})")
    (b0, t0), (b1, t1) = above[0], above[-1]
    return (t1 / t0) ** (1.0 / math.log2(b1 / b0))
