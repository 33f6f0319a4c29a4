"""The claims tables of a run are linear in its benchmarks: the shortened names are computed once per table (per row,
over all rows, 25,000 benchmarks took minutes; benchmarks/report_scale.py times the report)."""
from __future__ import annotations

from pytest_genai.report import views
from pytest_genai.results.runs import run_from_json

from .runfiles import bench, run_doc

CLAIM = {"id": "A1.ppl_ratio", "metric": "ppl_ratio", "measured": 1.01, "min": None, "max": 1.035, "paper": 1.0308,
         "verdict": "pass", "message": "m", "basis": "paper", "interval": None}


def test_claims_tables_shorten_the_names_once_per_table(monkeypatch) -> None:
    calls: list[int] = []
    real = views.distinct_parts

    def counted(names, *args, **kwargs):
        calls.append(len(names))
        return real(names, *args, **kwargs)

    monkeypatch.setattr(views, "distinct_parts", counted)
    shared = "smollm2-135m-cpu-real-wikitext-" + "-".join(f"part{k}" for k in range(20))  # too wide for one row
    ids = [f"{shared}-group{i // 10}-seed{i}-tail" for i in range(300)]
    run = run_from_json(run_doc([bench(f"test_q[{i}]", "quant", {"id": i}, {"ppl_ratio": 1.01}, claims=[CLAIM])
                                 for i in ids]), "run.json")
    ((test, table),) = views.claims_tables(run.records)
    assert test == "test_q" and len(table.rows) == 300
    assert calls == [300]
    assert [row[1] for row in table.rows][:2] == ["group0-seed0", "group0-seed1"]
