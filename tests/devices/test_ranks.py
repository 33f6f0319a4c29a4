"""--genai-nproc against the node: one rule (pytest_genai.devices.ranks) for every distributed benchmark."""
import ast
from pathlib import Path

import pytest

from pytest_genai.devices.ranks import ranks_problem

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("kind, nproc, cores, gpus, needle", [
    ("cpu", 99999, 2, None, "--genai-nproc 99999 needs 99999 CPU cores (one per rank); this process may use 2: "
                            "lower --genai-nproc to 2 or fewer"),
    ("cpu", 3, 2, None, "lower --genai-nproc to 2"),
    ("cuda", 8, None, 4, "--genai-nproc 8 needs 8 GPUs per node (one per rank), found 4"),
])
def test_more_ranks_than_cores_or_gpus_is_a_reason_naming_the_option(kind, nproc, cores, gpus, needle):
    assert needle in ranks_problem(kind, nproc, cores=cores, gpus=gpus)


@pytest.mark.parametrize("kind, nproc, cores, gpus", [("cpu", 2, 2, None), ("cpu", 1, 16, None),
                                                       ("cuda", 4, None, 4), ("wse", 99, None, None)])
def test_ranks_that_fit_have_no_problem(kind, nproc, cores, gpus):
    assert ranks_problem(kind, nproc, cores=cores, gpus=gpus) is None


def test_hpu_ranks_are_one_per_gaudi():
    assert ranks_problem("hpu", 8, hpus=8) is None
    assert ranks_problem("hpu", 16, hpus=8) == ("--genai-nproc 16 needs 16 Gaudi HPUs per node (one per rank), "
                                                "found 8: lower --genai-nproc to 8 or fewer")


def test_the_default_core_count_is_this_process_affinity():
    import os

    assert ranks_problem("cpu", len(os.sched_getaffinity(0))) is None
    assert ranks_problem("cpu", len(os.sched_getaffinity(0)) + 1) is not None


@pytest.mark.parametrize("test", ["test_diffusion.py::test_diffusion_ddp_scaling",
                                  "test_finetune.py::test_finetune_throughput",
                                  "test_finetune.py::test_finetune_wikitext",
                                  "test_dabench_level2.py::test_parallel_scaling"])
def test_every_distributed_benchmark_asks_the_rule_before_launching(test):
    """Each torchrun benchmark calls ranks_problem (finetune and Level 2 once had no guard against more ranks than
    cores)."""
    file, name = test.split("::")
    tree = ast.parse((BENCHMARKS / file).read_text(encoding="utf-8"))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    calls = {n.func.id for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "ranks_problem" in calls, f"{test} launches ranks without asking pytest_genai.devices.ranks"
