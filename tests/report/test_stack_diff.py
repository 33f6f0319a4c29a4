"""compare and gate name the software-stack items that differ between the two runs (machine_info.genai.stack)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_genai.cli.report import compare_main, gate_main
from pytest_genai.results.errors import EXIT_OK, EXIT_REGRESSION

from .runfiles import bench, run_doc

STACK = {"python": "3.11.7", "torch": "2.5.1", "cuda": "12.4", "transformers": "4.46.0", "deepspeed": None}


def write(path: Path, tps: float, **stack_changes) -> Path:
    doc = run_doc([bench("test_q[cpu]", "quant", {"bits": 8}, {"tokens_per_s": tps})])
    doc["machine_info"]["genai"]["stack"] = {**STACK, **stack_changes}
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("main", [compare_main, gate_main])
def test_a_changed_torch_version_is_named(tmp_path: Path, capsys, main) -> None:
    base = write(tmp_path / "base.json", 1000.0)
    cur = write(tmp_path / "cur.json", 400.0, torch="2.6.0", deepspeed="0.15.0")
    assert main([str(base), str(cur), "--no-claims"] if main is gate_main else [str(base), str(cur)]) in (
        EXIT_OK, EXIT_REGRESSION)
    out = capsys.readouterr().out
    assert ("Software stack differences (baseline -> current):\n\n- torch 2.5.1 -> 2.6.0\n"
            "- deepspeed not installed -> 0.15.0") in out
    assert out.index("Regressed beyond") < out.index("Software stack") if main is compare_main else True


@pytest.mark.parametrize("main", [compare_main, gate_main])
def test_identical_stacks_print_no_stack_line(tmp_path: Path, capsys, main) -> None:
    base = write(tmp_path / "base.json", 1000.0)
    cur = write(tmp_path / "cur.json", 1000.0)
    assert main([str(base), str(cur), "--no-claims"] if main is gate_main else [str(base), str(cur)]) == EXIT_OK
    assert "Software stack" not in capsys.readouterr().out
