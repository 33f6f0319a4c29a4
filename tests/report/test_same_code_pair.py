"""Two runs of the same code never gate as regressed, in either order: the pair the run noise was measured from
(tests/report/data/same_code_pair) and one it was not (same_code_pair_2). With the run noise set to 0 (rounds alone)
the first pair did, which is what the measured run noise is for."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def _unpacked(folder: Path, name: str) -> dict[str, Path]:
    out = {}
    for side in ("a", "b"):
        path = folder / f"{name}-{side}.json"
        path.write_bytes(gzip.decompress((DATA / name / f"{side}.json.gz").read_bytes()))
        out[side] = path
    return out


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("pairs")
    return {name: _unpacked(folder, name) for name in ("same_code_pair", "same_code_pair_2")}


@pytest.fixture(scope="module")
def pair(pairs) -> dict[str, Path]:
    return pairs["same_code_pair"]


@pytest.mark.parametrize("name", ["same_code_pair", "same_code_pair_2"])
@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_the_same_code_gates_undecided_never_regressed(pairs, name, order, capsys) -> None:
    from pytest_genai.cli.report import EXIT_UNDECIDED, gate_main

    base, cur = (str(pairs[name][side]) for side in order)
    assert gate_main([base, cur, "--no-claims"]) == EXIT_UNDECIDED
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("**UNDECIDED** (exit 3)") and "noise between launches" in first
    if name == "same_code_pair":
        assert gate_main([base, cur, "--no-claims", "--run-noise", "0"]) == 1  # rounds alone: false alarms


def test_a_bad_run_noise_is_one_line_naming_it(pair, capsys) -> None:
    from pytest_genai.cli.report import gate_main

    assert gate_main([str(pair["a"]), str(pair["b"]), "--run-noise", "lots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run-noise 'lots'" in err[0] and "measured" in err[0]


def test_holm_holds_back_what_only_one_row_at_a_time_would_call_regressed() -> None:
    """300 rows at one-sided p 0.005 (each a regression alone) are undecided together; p 1e-8 stands."""
    import dataclasses

    from pytest_genai.report.compare import INCONCLUSIVE, INTERVAL, REGRESSED, MetricComparison, holm

    def row(p: float) -> MetricComparison:
        return MetricComparison("t", "s", "lower", 1.0, 1.3, 0.3, 0.05, REGRESSED, "measured", basis=INTERVAL,
                                interval={"p_worse": p, "lo": 1.1, "hi": 1.5}, past_threshold=True)

    rows = [(row(0.005),) for _ in range(299)] + [(row(1e-8),)]
    judged = [group[0] for group in holm(rows)]
    assert [r.status for r in judged[:299]] == [INCONCLUSIVE] * 299 and all(r.undecided for r in judged[:299])
    assert judged[-1].status == REGRESSED and "Holm" in judged[0].note
    alone = holm([(row(0.005),)])[0][0]
    assert alone.status == REGRESSED  # one row tested: Holm is the plain test
    assert dataclasses.replace(alone, status=REGRESSED) == alone


def test_the_shipped_run_noise_is_what_the_script_measures_from_the_committed_pairs(pairs) -> None:
    """claims/data/run_noise.toml is scripts/measure_run_noise.py's output over the two pairs here, pooled."""
    import importlib.util

    from pytest_genai.report.run_noise import measured

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("measure_run_noise", root / "scripts" / "measure_run_noise.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    first, second = pairs["same_code_pair"], pairs["same_code_pair_2"]
    default, per = script.table([str(first["a"]), str(first["b"]), "+", str(second["a"]), str(second["b"])])
    shipped = measured()
    assert shipped.default == default
    assert dict(shipped.per_experiment) == {e: v for e, (v, _, _) in per.items()}
