"""Claim coverage: every claim is checked by some benchmark (declared with @pytest.mark.claims) on a device kind it
applies to, or is a generation claim that `pytest-genai gate` checks. No dead claims."""
from pathlib import Path

import pytest

from pytest_genai.claims import load_claims
from pytest_genai.claims.coverage import checked_on, checkers_by_claim, collect, dead_claims
from pytest_genai.claims.model import Claim

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def markers():
    return collect(BENCHMARKS)


def test_no_claim_is_dead(markers) -> None:
    assert markers, "no claims markers collected from benchmarks/"
    assert dead_claims(load_claims(), markers) == []


def test_every_declared_id_is_a_claim_and_every_check_names_its_benchmark(markers) -> None:
    known = {c.id for c in load_claims()}
    by_claim = checkers_by_claim(markers)
    assert set(by_claim) <= known
    for claim in load_claims():
        where = checked_on(claim, by_claim.get(claim.id, []))
        assert where and all("::test_" in w or w == "pytest-genai gate" for w in where), (claim.id, where)


def test_a_claim_scoped_to_a_kind_no_benchmark_reaches_is_dead() -> None:
    claim = Claim(id="X.wse_only", paper="X", section="S", metric="m", unit="1", direction="none", min=1.0,
                  devices=("wse-2",))
    markers = [{"test": "benchmarks/test_a.py::test_b", "ids": ["X.wse_only"], "kinds": ["cpu", "cuda"]}]
    assert dead_claims([claim], markers) == ["X.wse_only"]
    markers[0]["kinds"].append("wse")
    assert dead_claims([claim], markers) == []


@pytest.mark.slow
def test_claims_command_lists_basis_and_checker(capsys, tmp_path) -> None:
    from pytest_genai.cli import main

    assert main(["claims", "--basis", "target"]) == 0
    out = capsys.readouterr().out
    assert "A1.target.quantize_vs_torchao" in out and "A1.ppl_ratio" not in out
    assert main(["claims", "--coverage", str(BENCHMARKS), "--json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    assert all(row["checked_by"] for row in rows)
    assert {row["basis"] for row in rows} == {"paper", "target", "physics"}
    assert main(["claims", "--coverage", "/nonexistent/benchmarks"]) == 2
    # a benchmarks folder that checks nothing: every claim is dead, whether printed as a table or as JSON
    assert main(["claims", "--coverage", str(tmp_path)]) == 1
    assert main(["claims", "--coverage", str(tmp_path), "--json"]) == 1
    assert "not a folder" in capsys.readouterr().err
