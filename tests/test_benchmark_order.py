"""The A1 quality rows run in their CASES order within each (model, device): each quantized model is built once."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quantized_rows_of_one_model_run_together():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/test_quantization.py", "benchmarks/test_eval_vs_lmeval.py",
         "-m", "cpu", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    from benchmarks.test_quantization import CASES  # noqa: E402 - the order the rows must follow

    rows = [line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines()
            if line.startswith("benchmarks/test_quantization.py::test_quantized_model_quality[")]
    assert rows, out.stdout[-2000:]
    seen: dict[str, list[int]] = {}
    for row in rows:
        case = next(c for c in sorted(CASES, key=lambda c: -len(c.id)) if row.endswith("-" + c.id))
        seen.setdefault(row[: -len(case.id)], []).append(CASES.index(case))
    for group, order in seen.items():
        assert order == sorted(order) == list(range(len(CASES))), f"{group}: rows ran in case order {order}"
    groups = [next(g for g in seen if row.startswith(g)) for row in rows]
    assert groups == sorted(groups, key=groups.index), f"the rows of one model are interleaved: {groups}"
