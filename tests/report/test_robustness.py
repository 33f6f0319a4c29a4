"""Whatever a run file holds, the commands answer with an exit code and a message — never a traceback."""
import contextlib
import io
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_genai.cli.report import compare_main, gate_main, report_main

from .runfiles import bench, run_doc

#: Numbers at the edges that matter to compare/gate: integers past float range (2**1024 and up; JSON may hold any
#: integer), the largest/smallest doubles, subnormals, negative zero, inf and nan (json.dumps writes Infinity/NaN,
#: which Python's reader accepts).
EDGE_NUMBERS = [2**1024, -(2**1024), 10**400, -(10**400), 2**53 + 1, 2**63, -(2**63) - 1, 0, -0.0, 5e-324, -5e-324,
                2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, math.inf, -math.inf,
                math.nan]
numbers = (st.integers(min_value=-(10**400), max_value=10**400) | st.integers()
           | st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True) | st.sampled_from(EDGE_NUMBERS))
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
#: Where a number is read as one: the metrics, the timing stats, the config (a config value is part of the key).
NUMBER_PATHS = [("benchmarks", 0, "extra_info", "genai", "metrics", "tokens_per_s"),
                ("benchmarks", 0, "extra_info", "genai", "metrics", "perplexity"),
                ("benchmarks", 0, "stats", "median"), ("benchmarks", 0, "extra_info", "genai", "config", "bits")]
PATHS = [
    (), ("benchmarks",), ("benchmarks", 0), ("benchmarks", 0, "name"), ("benchmarks", 0, "extra_info"),
    ("benchmarks", 0, "stats"), ("benchmarks", 0, "extra_info", "genai"), ("benchmarks", 0, "extra_info", "genai", "schema"),
    ("benchmarks", 0, "extra_info", "genai", "device"), ("benchmarks", 0, "extra_info", "genai", "config"),
    ("benchmarks", 0, "extra_info", "genai", "metrics"), ("benchmarks", 0, "extra_info", "genai", "metrics", "tokens_per_s"),
    ("benchmarks", 0, "extra_info", "genai", "metric_sources"), ("benchmarks", 0, "extra_info", "genai", "claims"),
    ("benchmarks", 0, "extra_info", "genai", "labels"), ("benchmarks", 0, "extra_info", "genai", "model"),
    ("machine_info",), ("machine_info", "genai"),
]


def mutated(path: tuple, value) -> object:
    doc = run_doc([bench("test_q[cpu]", config={"bits": 8}, metrics={"tokens_per_s": 10.0, "perplexity": 12.0},
                         labels={"bound": "memory"}, median=0.1)])
    if not path:
        return value
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _answers_without_traceback(tmp_path: Path, path: tuple, value) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(run_doc([bench("test_q[cpu]", config={"bits": 8}, metrics={"tokens_per_s": 11.0})])))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(mutated(path, value)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # the bad run as current and as baseline
        codes = [gate_main([str(good), str(bad)]), gate_main([str(bad), str(good)]),
                 compare_main([str(bad), str(good)]), report_main([str(bad)])]
    assert set(codes) <= {0, 1, 2, 3}
    assert "Traceback" not in err.getvalue()
    if 2 in codes:
        assert "error:" in err.getvalue()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PATHS), json_values)
def test_no_traceback_on_any_mutation(tmp_path: Path, path: tuple, value) -> None:
    _answers_without_traceback(tmp_path, path, value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(NUMBER_PATHS), numbers)
@pytest.mark.slow
def test_no_traceback_on_any_number_where_numbers_are_read(tmp_path: Path, path: tuple, value) -> None:
    _answers_without_traceback(tmp_path, path, value)


def _number_id(value) -> str:
    if isinstance(value, int) and abs(value) > 2**64:
        return f"{'-' if value < 0 else ''}int_{len(str(abs(value)))}_digits"
    return repr(value)


@pytest.mark.parametrize("path", NUMBER_PATHS, ids=lambda path: ".".join(map(str, path[-2:])))
@pytest.mark.parametrize("value", EDGE_NUMBERS, ids=_number_id)
@pytest.mark.slow
def test_no_traceback_on_each_edge_number(tmp_path: Path, path: tuple, value) -> None:
    """Every edge number at every place a number is read, always (hypothesis may not draw them in 60 examples)."""
    _answers_without_traceback(tmp_path, path, value)


def test_nan_and_infinity_everywhere_still_render(tmp_path: Path) -> None:
    entry = bench("t[cpu]", config={"x": math.nan}, metrics={"tokens_per_s": math.inf, "perplexity": math.nan,
                                                            "compression_ratio": -math.inf, "arithmetic_intensity": math.nan,
                                                            "achieved_tflops": 1.0})
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run_doc([entry, entry])))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert report_main([str(path), "--plots", str(tmp_path / "p")]) == 0
        assert gate_main([str(path), str(path)]) == 2  # duplicate keys in one run cannot be paired: said so
    assert "|inf|" in out.getvalue().replace(" ", "") and "cannot be paired" in err.getvalue()
