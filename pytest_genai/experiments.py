"""The list of experiments: one table that markers, claim validation, reports and the docs are derived from.

Each row says what one paper experiment is called everywhere: the name benchmarks record
(``extra_info.genai.experiment``, a claim's ``experiment``), its paper section, the pytest marker that selects it,
the packages that implement it, its benchmark files, its metrics registry files and its documentation pages.
``tests/test_experiments.py`` checks the table against the tree (every benchmark file in exactly one row, every
recorded experiment name registered, every metrics file and doc page present, the README's table in step).

Adding an experiment: add its row here, then its package, ``benchmarks/test_<name>.py``, ``metrics_<name>.toml``
and ``docs/<name>.md`` (see README, "Adding an experiment").
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str  # what genai.start(experiment=...) records and a claim's ``experiment`` names
    paper: str  # "A" or "B" (shared/PAPERS.md)
    section: str  # "A1", ..., "B2"
    title: str
    marker: str  # the pytest marker selecting it (B1 and B2 share their family's)
    packages: tuple[str, ...]  # implementing package folders, from the repository root
    benchmarks: tuple[str, ...]  # files under benchmarks/
    metrics_files: tuple[str, ...]  # under pytest_genai/claims/data/
    docs: tuple[str, ...]  # pages under docs/
    #: Config keys its benchmarks record that claims may scope on (``where``); tests/test_experiments.py checks
    #: a real run records each of them, and the claims loader refuses any other ``where`` key.
    config_keys: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``A1 quant``: the section and the name, as reports head an experiment's tables."""
        return f"{self.section} {self.name}"


EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("quant", "A", "A1", "sensitivity-aware mixed-precision post-training quantization", "quant",
               ("pytest_genai/quant", "pytest_genai/evals", "pytest_genai/compose"),
               ("test_quantization.py", "test_eval_vs_lmeval.py", "test_quantizer.py"),
               ("metrics_quant.toml", "metrics_evals.toml"), ("quant.md", "evals.md"),
               ("mode", "task", "precision", "backend", "comparison", "throughput_batch", "scale", "batch_size")),
    Experiment("finetune", "A", "A2", "fine-tuning throughput: DDP / FSDP / DeepSpeed ZeRO-3, Flash Attention",
               "finetune", ("pytest_genai/train",), ("test_finetune.py",), ("metrics_finetune.toml",),
               ("finetune.md",),
               ("model", "strategy", "sharded", "attention", "precision", "fits", "scale", "world_size")),
    Experiment("diffusion", "A", "A3", "diffusion-model training scaling", "diffusion", ("pytest_genai/diffusion",),
               ("test_diffusion.py",), ("metrics_diffusion.toml",), ("diffusion.md",),
               ("dtype", "strategy", "world_size", "image_size", "batch_size")),
    Experiment("dabench", "B", "B1", "DABench-LLM Level 1: intra-chip profiling", "dabench",
               ("pytest_genai/dabench",), ("test_dabench_level1.py",), ("metrics_dabench.toml",), ("dabench.md",),
               ("mode", "dtype", "seq_len", "batch", "layers", "hidden", "attention", "region")),
    Experiment("dabench_level2", "B", "B2", "DABench-LLM Level 2: inter-chip scaling and deployment", "dabench",
               ("pytest_genai/dabench/level2",), ("test_dabench_level2.py",), ("metrics_dabench_level2.toml",),
               ("dabench_level2.md",), ("strategy", "precision", "world_size", "workload")),
)

#: Metrics files shared by every experiment (not owned by one row).
SHARED_METRICS_FILES = ("metrics_core.toml", "metrics_device.toml")

NAMES: tuple[str, ...] = tuple(e.name for e in EXPERIMENTS)

_PAPER_TITLES = {"A": "Paper A", "B": "Paper B"}


def get(name: str) -> Experiment:
    """The registered experiment ``name``; a ValueError naming the known ones otherwise."""
    for experiment in EXPERIMENTS:
        if experiment.name == name:
            return experiment
    raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(NAMES)} (pytest_genai/experiments.py)")


def markers() -> dict[str, str]:
    """Marker -> its help line, in table order: one marker per family, naming the sections it selects."""
    out: dict[str, list[Experiment]] = {}
    for experiment in EXPERIMENTS:
        out.setdefault(experiment.marker, []).append(experiment)
    return {marker: "; ".join(f"{_PAPER_TITLES[e.paper]}, {e.section}: {e.title}" for e in rows)
            for marker, rows in out.items()}


def for_benchmark_file(filename: str) -> Experiment | None:
    """The experiment a file under ``benchmarks/`` belongs to (by its base name), or None."""
    for experiment in EXPERIMENTS:
        if filename in experiment.benchmarks:
            return experiment
    return None


def label(name: str | None) -> str:
    """``A1 quant`` for a registered name; the name itself for anything else (a plain pytest-benchmark row)."""
    if name is None:
        return "pytest-benchmark"
    try:
        return get(name).label
    except ValueError:
        return name
