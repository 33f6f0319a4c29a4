"""Two runs of the same code (tests/report/data/same_code_pair) never gate as regressed, in either order; with the
run noise set to 0 (rounds alone) they did, which is what the measured run noise is for."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

PAIR = Path(__file__).parent / "data" / "same_code_pair"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pair")
    out = {}
    for name in ("a", "b"):
        path = folder / f"{name}.json"
        path.write_bytes(gzip.decompress((PAIR / f"{name}.json.gz").read_bytes()))
        out[name] = path
    return out


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_the_same_code_gates_undecided_never_regressed(pair, order, capsys) -> None:
    from pytest_genai.report.cli import EXIT_UNDECIDED, gate_main

    base, cur = (str(pair[side]) for side in order)
    assert gate_main([base, cur, "--no-claims"]) == EXIT_UNDECIDED
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("**UNDECIDED** (exit 3)") and "noise between launches" in first
    assert gate_main([base, cur, "--no-claims", "--run-noise", "0"]) == 1  # rounds alone: false alarms


def test_a_bad_run_noise_is_one_line_naming_it(pair, capsys) -> None:
    from pytest_genai.report.cli import gate_main

    assert gate_main([str(pair["a"]), str(pair["b"]), "--run-noise", "lots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run-noise 'lots'" in err[0] and "measured" in err[0]
