"""Adding a run costs a number of SQL statements that does not grow with its benchmarks (an INSERT and a device
lookup per benchmark made `store add` of 3,600 benchmarks take 9.3 s; benchmarks/report_scale.py times it)."""
from __future__ import annotations

from typing import Any

from pytest_genai.store.engine import open_store
from pytest_genai.store.read import stored_run
from pytest_genai.store.write import add_document

from .test_store import bench, run_doc


def _doc(n: int, tag: str) -> dict[str, Any]:
    return run_doc([bench(f"test_{tag}[{i}]", "quant", {"id": f"c{i}"}, {"tokens_per_s": float(i), "perplexity": 2.0},
                          device=("cuda", "h100" if i % 2 else "a100")) for i in range(n)])


def _statements(store: Any, n: int) -> int:
    from sqlalchemy import event

    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        added = add_document(store, _doc(n, f"n{n}"), f"run{n}.json")
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    run = stored_run(store, added.run_id)
    assert [r.name for r in run.records] == [f"test_n{n}[{i}]" for i in range(n)]  # each benchmark its own rows
    assert [r.metrics["tokens_per_s"] for r in run.records] == [float(i) for i in range(n)]
    assert [r.device.generation for r in run.records] == ["h100" if i % 2 else "a100" for i in range(n)]
    return len(seen)


def test_adding_a_run_takes_as_many_statements_for_200_benchmarks_as_for_5(store_url: str) -> None:
    with open_store(store_url) as store:
        add_document(store, _doc(2, "warm"), "warm.json")  # both devices known to the store before counting
        assert _statements(store, 200) == _statements(store, 5)
