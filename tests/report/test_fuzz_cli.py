"""Mutated real run files (the committed runs under docs/results, names with markup, control and bidi characters,
wrong types, huge numbers) through `report`, `compare`, `gate`, `store add` and `history`: exit 0, 1, 2 or 3 only
(3: the gate's "undecided"), never a traceback, nothing written outside the chosen folder (docs/reliability.md)."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [ROOT / "docs/results/2026-12-01-quantizer-cpu/quantizer-tiny.json",
         ROOT / "docs/results/2026-12-04-cuda-h200/run2/cuda.json"]
EXITS = {0, 1, 2, 3}

HOSTILE = ["<script>alert(1)</script>", "**b** [x](http://e.example) `c` | # h", "a$b$c", "$\\frac$", "\x00\x1b[31m\x07",
           "\u202egnp.exe", "line\nbreak\r\n# heading", "../../outside", "=HYPERLINK(\"http://e\",\"x\")", "",
           "x" * 300, "h100\x00", "%20?mode=memory#frag", "\ud7ff\ue000\U0010ffff"]
WEIRD = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.sampled_from([None, True, False, [], {}, [1, None, "x"], {"a": {"b": []}}]),
    st.sampled_from([0, -1, 10**400, -(10**30), 1e308, -1e308, 5e-324, float("inf"), float("-inf"), float("nan")]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
)


def _seed(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    doc["benchmarks"] = doc["benchmarks"][:3]  # small: a few benchmarks carry every kind of field
    for b in doc["benchmarks"]:
        if isinstance(b.get("stats"), dict):
            b["stats"].pop("data", None)
    return doc


SEED_DOCS = [_seed(p) for p in SEEDS if p.exists()]


def _paths(node: Any, prefix: tuple = (), depth: int = 0) -> list[tuple]:
    """Every key path in ``node`` (dict keys and list indexes), to depth 7."""
    out = [prefix] if prefix else []
    if depth >= 7:
        return out
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,), depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node[:4]):
            out += _paths(v, prefix + (i,), depth + 1)
    return out


def _mutate(doc: dict[str, Any], edits: list[tuple[int, Any, bool]]) -> dict[str, Any]:
    """``doc`` with each edit applied: (which key path, new value, rename the key to the value instead)."""
    doc = copy.deepcopy(doc)
    for pick, value, rename in edits:
        paths = _paths(doc)
        if not paths:
            break
        path = paths[pick % len(paths)]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if rename and isinstance(parent, dict) and isinstance(value, str):
            parent[value] = parent.pop(last)
        else:
            parent[last] = value
    return doc


def _names(doc: dict[str, Any], text: str) -> dict[str, Any]:
    """Every benchmark's name, experiment, model, config id and generation with ``text`` in it."""
    doc = copy.deepcopy(doc)
    for b in doc.get("benchmarks", []):
        b["name"] = f"test_x[{text}]"
        b["fullname"] = f"benchmarks/test_x.py::test_x[{text}]"
        genai = b.get("extra_info", {}).get("genai", {})
        if isinstance(genai, dict):
            genai["model"] = text
            if isinstance(genai.get("config"), dict):
                genai["config"]["id"] = text
            if isinstance(genai.get("device"), dict):
                genai["device"]["generation"] = text
    return doc


def _run(argv: list[str]) -> tuple[int, str]:
    from pytest_genai.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)  # an exception escaping here is the traceback a user would see: the test fails
    return code, err.getvalue()


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.sampled_from(range(len(SEED_DOCS))) if SEED_DOCS else st.nothing(),
       edits=st.lists(st.tuples(st.integers(0, 10**6), WEIRD, st.booleans()), max_size=4),
       name=st.one_of(st.none(), st.sampled_from(HOSTILE), st.text(max_size=30)))
@example(seed=len(SEED_DOCS) - 1, edits=[], name="$\\frac$")  # a name matplotlib read as broken maths
@example(seed=0, edits=[], name="\u202e<script>|x")
def test_mutated_real_runs_never_crash_a_command(seed: int, edits: list, name: str | None) -> None:
    doc = SEED_DOCS[seed]
    current = _mutate(doc if name is None else _names(doc, name), edits)
    repo_before = set(os.listdir(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        work = top / "work"
        work.mkdir()
        base, cur = work / "base.json", work / "cur.json"
        base.write_text(json.dumps(doc))
        try:
            cur.write_text(json.dumps(current))
        except ValueError:  # an int past Python's str conversion limit: no file could hold it as written
            return
        store = str(work / "s.sqlite")
        with pytest.MonkeyPatch.context() as m:
            m.chdir(work)
            m.setenv("GENAI_STORE", store)
            m.setenv("XDG_DATA_HOME", str(work / "data"))
            for argv in (["report", str(cur), "-o", str(work / "r.md"), "--plots", str(work / "plots")],
                         ["compare", str(base), str(cur), "--format", "csv"],
                         ["gate", str(base), str(cur), "-o", str(work / "g.md")],
                         ["store", "add", str(cur), "--store", store],
                         ["history", "tokens_per_s", "--store", store]):
                code, err = _run(argv)
                assert code in EXITS, (argv[0], code, err)
                assert "Traceback" not in err, (argv[0], err)
                if code == 2:  # bad input: one error line (warnings about other benchmarks may come before it)
                    assert len([ln for ln in err.splitlines() if ": error" in ln]) == 1, (argv[0], err)
        assert {p for p in _listing(top) if not p.startswith("work")} == set()  # nothing beside the folder
    assert set(os.listdir(ROOT)) <= repo_before  # nor in the checkout (a name like ../../outside)
