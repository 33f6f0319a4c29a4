"""``pytest-genai reference`` and the basis column of ``pytest-genai claims``."""
from __future__ import annotations

import json

from pytest_genai.cli import SUBCOMMANDS, main


def test_the_subcommand_is_registered() -> None:
    assert SUBCOMMANDS["reference"][0] == "pytest_genai.cli.reference:main"


def test_list_prints_rows_with_their_provenance(capsys) -> None:
    assert main(["reference", "list", "--source", "nemo"]) == 0
    out = capsys.readouterr().out
    assert "llama3-8b" in out and "performance_summary.md:24@8e3d65dcfe" in out


def test_runs_writes_one_file_per_generation_that_compare_reads(tmp_path, capsys) -> None:
    assert main(["reference", "runs", str(tmp_path), "--source", "optimum-habana"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "reference-gaudi.json", "reference-gaudi2.json", "reference-gaudi3.json"]
    assert main(["compare", str(tmp_path / "reference-gaudi2.json"), str(tmp_path / "reference-gaudi3.json")]) in (0, 1)


def test_generations_prints_each_claim_with_the_papers_bounds(capsys) -> None:
    assert main(["reference", "generations", "--source", "optimum-habana"]) == 0
    out = capsys.readouterr().out
    assert "A2.gen.gaudi_gaudi2 (paper: [2.5, 3])" in out and "8.03x" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    assert main(["reference", "list", "--source", "mlperf"]) == 2
    assert "mlperf" in capsys.readouterr().err
    assert main(["reference", "check", str(tmp_path / "missing.json")]) == 2
    assert main(["reference", "list", "--file", str(tmp_path / "x.json")]) == 2
    assert "--file needs --source" in capsys.readouterr().err


def test_claims_lists_the_reference_claims_with_their_basis(capsys) -> None:
    assert main(["claims", "--basis", "reference", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed and {c["basis"] for c in listed} == {"reference"}
    assert any(c["devices"] == ["gaudi2"] and c["where"]["micro_batch"] == 16 for c in listed)
    assert main(["claims"]) == 0
    assert "ref.optimum-habana" not in capsys.readouterr().out  # only on request
    assert main(["claims", "--reference"]) == 0
    out = capsys.readouterr().out
    assert "ref.optimum-habana" in out and " reference " in out


def test_rows_written_by_list_json_read_back_with_rows(tmp_path, capsys) -> None:
    assert main(["reference", "list", "--source", "nemo", "--json"]) == 0
    rows = tmp_path / "rows.json"
    rows.write_text(capsys.readouterr().out)
    assert main(["reference", "list", "--rows", str(rows)]) == 0
    assert "llama3-8b" in capsys.readouterr().out
    rows.write_text('[{"row_id": "x"}]')
    assert main(["reference", "list", "--rows", str(rows)]) == 2
    assert "row #1" in capsys.readouterr().err


def test_fetch_of_a_source_removed_upstream_says_so(tmp_path, capsys) -> None:
    assert main(["reference", "fetch", "nemo", str(tmp_path / "x.md")]) == 2
    assert "no online file" in capsys.readouterr().err
