"""docs/finetune.md's generation-claims table is the one the code gives today, row for row."""
from __future__ import annotations

from pathlib import Path

from pytest_genai.claims import load_claims
from pytest_genai.reference import sources
from pytest_genai.reference.generations import judge, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "finetune.md"


def test_every_row_of_the_table_is_in_the_doc() -> None:
    rows = sources.load("optimum-habana")
    _headers, lines = table([s for s in judge(rows, load_claims()) if s.checks], rows)
    text = DOC.read_text(encoding="utf-8")
    stale = []
    for line in lines:
        line[2] = f"`{line[2]}`"
        if "| " + " | ".join(str(c) for c in line) + " |" not in text:
            stale.append(line[2])
    assert len(lines) == 35 and not stale, (f"docs/finetune.md's reference table is stale for {stale}; regenerate it "
                                            "from pytest_genai.reference.generations.table")
