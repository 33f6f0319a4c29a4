"""Reading run files: the contract's fields, and one clear error per kind of bad file."""
import json
import math
from pathlib import Path

import pytest

from pytest_genai.results.errors import ReportInputError
from pytest_genai.report.matching import match_records
from pytest_genai.results.measurement import Measurement
from pytest_genai.results.runs import BENCH_MEDIAN_METRIC, Record, load_run, run_from_json

from .runfiles import bench, run_doc, write_run


def test_reads_the_contract(tmp_path: Path) -> None:
    path = write_run(tmp_path / "a.json", [
        bench("test_q[cpu-real]", config={"mode": "real", "bits": 8}, metrics={"tokens_per_s": 1200.0, "layers": 2},
              sources={"tokens_per_s": "measured", "layers": "measured"}, units={"tokens_per_s": "tokens/s"},
              labels={"bound": "memory"}, median=0.25),
    ])
    run = load_run(path)
    (rec,) = run.records
    assert rec.experiment == "quant" and rec.model == "tiny" and rec.device.generation == "cpu"
    assert rec.metrics == {"tokens_per_s": 1200.0, "layers": 2, BENCH_MEDIAN_METRIC: 0.25}
    assert rec.units["tokens_per_s"] == "tokens/s" and rec.labels == {"bound": "memory"}
    assert rec.key == ("quant", '{"bits":8,"mode":"real"}', "tiny")
    assert run.warnings == () and run.datetime == "2026-01-01T00:00:00"


def _error(tmp_path: Path, content: bytes | str) -> str:
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ReportInputError) as err:
        load_run(path)
    message = str(err.value)
    assert message.startswith(str(path))
    return message


def test_truncated_file(tmp_path: Path) -> None:
    text = json.dumps(run_doc([bench("t", metrics={"tokens_per_s": 1.0})]))
    assert "truncated" in _error(tmp_path, text[: len(text) // 2])


def test_not_json(tmp_path: Path) -> None:
    message = _error(tmp_path, "<html>502 Bad Gateway</html>")
    assert "invalid JSON at line 1" in message and "--benchmark-json" in message


def test_empty_and_binary_files(tmp_path: Path) -> None:
    assert "empty" in _error(tmp_path, b"")
    assert "not UTF-8" in _error(tmp_path, b"\xff\xfe\x00{")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="no such file"):
        load_run(tmp_path / "absent.json")
    with pytest.raises(ReportInputError, match="is a directory"):
        load_run(tmp_path)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([1, 2], "top level is a JSON list"),
        ({"results": []}, "no 'benchmarks' list"),
        ({"benchmarks": {}}, "'benchmarks' is a dict"),
        ({"benchmarks": ["x"]}, "benchmark #0: is a JSON str"),
        ({"benchmarks": [{"stats": {}}]}, "has no 'name'"),
    ],
)
def test_not_pytest_benchmark_json(tmp_path: Path, doc, expected: str) -> None:
    assert expected in _error(tmp_path, json.dumps(doc))


def test_other_contract_version_is_named(tmp_path: Path) -> None:
    message = _error(tmp_path, json.dumps(run_doc([bench("test_a", schema="pytest-genai/2")])))
    assert "'test_a'" in message and "'pytest-genai/2'" in message and "reads 'pytest-genai/1'" in message
    assert "no 'schema' field" in _error(tmp_path, json.dumps(run_doc([bench("test_a", schema=None)])))


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"experiment": ""}, "experiment must be a non-empty string"),
        ({"device": "cpu"}, "device must be an object"),
        ({"device": {"kind": "cpu"}}, "device.generation must be a non-empty string"),
        ({"config": [1]}, "config must be an object"),
        ({"metrics": [1.0]}, "metrics must be an object"),
        ({"claims": "pass"}, "claims must be a list"),
    ],
)
def test_malformed_genai_fields_name_benchmark_and_field(tmp_path: Path, patch, expected: str) -> None:
    entry = bench("test_b", metrics={"tokens_per_s": 1.0})
    entry["extra_info"]["genai"].update(patch)
    message = _error(tmp_path, json.dumps(run_doc([entry])))
    assert "benchmark 'test_b'" in message and expected in message


def test_non_numbers_and_nonfinite_values_are_warnings_not_errors(tmp_path: Path) -> None:
    path = write_run(tmp_path / "a.json", [bench("t", metrics={"acc": "high", "ppl": math.nan, "tps": math.inf, "ok": 1.0})])
    assert "NaN" in path.read_text()  # what json.dumps writes, and pytest-benchmark too
    run = load_run(path)
    assert set(run.records[0].metrics) == {"ppl", "tps", "ok"}
    assert any("acc is 'high', not a number" in w for w in run.warnings)
    assert any("ppl is nan (not finite)" in w for w in run.warnings)


def test_missing_metrics_object_is_a_warning(tmp_path: Path) -> None:
    entry = bench("t")
    del entry["extra_info"]["genai"]["metrics"]
    run = run_from_json(run_doc([entry]), "x.json")
    assert run.records[0].metrics == {} and "has no 'metrics'" in run.warnings[0]


def test_empty_run_loads_with_no_records(tmp_path: Path) -> None:
    assert load_run(write_run(tmp_path / "e.json", [])).records == ()


def test_plain_pytest_benchmark_entries_keep_their_timing() -> None:
    entry = {"name": "test_sort[100]", "fullname": "t.py::test_sort[100]", "param": "100", "extra_info": {},
             "stats": {"median": 0.5}}
    (rec,) = run_from_json({"benchmarks": [entry]}, "x").records
    assert rec.experiment is None and rec.metrics == {BENCH_MEDIAN_METRIC: 0.5}
    assert rec.key == ("pytest-benchmark:t.py::test_sort", "100", "")


def test_plain_benchmarks_of_the_same_name_in_two_files_or_classes_are_not_duplicates(tmp_path: Path, capsys) -> None:
    from pytest_genai.cli.report import gate_main

    def entry(fullname, median):
        return {"name": "test_sort", "fullname": fullname, "param": None, "extra_info": {}, "stats": {"median": median}}

    names = ["tests/test_a.py::test_sort", "tests/test_b.py::test_sort", "tests/test_c.py::TestC::test_sort"]
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    base.write_text(json.dumps({"benchmarks": [entry(n, 1.0) for n in names]}))
    cur.write_text(json.dumps({"benchmarks": [entry(n, 1.0) for n in names]}))
    assert gate_main([str(base), str(cur)]) == 0, capsys.readouterr().err
    cur.write_text(json.dumps({"benchmarks": [entry(n, 2.5 if "test_b" in n else 1.0) for n in names]}))
    assert gate_main([str(base), str(cur)]) == 1  # test_b's slowdown, paired with test_b only
    assert "test_sort" in capsys.readouterr().out


def _recs(*entries):
    return run_from_json(run_doc(list(entries)), "x").records


def test_matching_ignores_node_id_and_device() -> None:
    base = _recs(bench("test_q[cuda]", config={"bits": 8}, device=("cuda", "a100-sxm4-80gb")))
    cur = _recs(bench("test_q[hpu]", config={"bits": 8}, device=("hpu", "gaudi2")),
                bench("test_q[hpu-4]", config={"bits": 4}, device=("hpu", "gaudi2")))
    m = match_records(base, cur)
    assert [(p.baseline.name, p.current.name) for p in m.pairs] == [("test_q[cuda]", "test_q[hpu]")]
    assert [r.name for r in m.only_current] == ["test_q[hpu-4]"] and m.only_baseline == ()


def test_matching_one_config_on_several_devices_pairs_by_device() -> None:
    base = _recs(bench("q[cpu]", device=("cpu", "cpu")), bench("q[cuda]", device=("cuda", "h100-sxm")))
    cur = _recs(bench("q[cuda]", device=("cuda", "h200")), bench("q[cpu]", device=("cpu", "cpu")))
    m = match_records(base, cur)
    assert sorted((p.baseline.name, p.current.name) for p in m.pairs) == [("q[cpu]", "q[cpu]"), ("q[cuda]", "q[cuda]")]


def test_matching_model_is_part_of_the_key() -> None:
    m = match_records(_recs(bench("a", model="m1")), _recs(bench("a", model="m2")))
    assert m.pairs == () and len(m.only_baseline) == len(m.only_current) == 1


def test_rounds_are_read_where_two_or_more_finite_numbers_were_recorded() -> None:
    entry = bench("test_q", metrics={"tokens_per_s": 100.0, "perplexity": 12.0, "loss": 1.0})
    entry["extra_info"]["genai"]["metric_rounds"] = {"tokens_per_s": [99.0, 101.0], "perplexity": [12.0],
                                                     "loss": [1.0, "x"], "gone": [1.0, 2.0], "flops": [10**400, 1]}
    entry["stats"] = {"median": 0.5, "data": [0.4, 0.5, 0.6]}
    (rec,) = run_from_json(run_doc([entry]), "x").records
    assert rec.rounds == {"tokens_per_s": (99.0, 101.0), BENCH_MEDIAN_METRIC: (0.4, 0.5, 0.6)}
    plain = {"name": "t", "fullname": "t.py::t", "extra_info": {}, "stats": {"median": 0.5, "data": [0.5, math.nan]}}
    (rec,) = run_from_json({"benchmarks": [plain]}, "x").records
    assert rec.rounds == {}


def test_metrics_json_is_what_metrics_from_json_reads_back() -> None:
    """The recorder's writer and the reader are one pair: each measurement comes back whole."""
    from pytest_genai.results.runs import metrics_from_json, metrics_json
    from pytest_genai.stats import median_interval

    iv = median_interval([1.0, 2.0, 3.0])
    written = metrics_json({"tokens_per_s": Measurement(2.0, "measured", "tokens/s", (1.0, 2.0, 3.0), iv),
                            "world_size": Measurement(2, "config", "ranks"), "x_modeled": Measurement(1.5, "modeled")})
    assert written["metric_units"]["x_modeled"] == "" and written["metric_rounds"] == {"tokens_per_s": [1.0, 2.0, 3.0]}
    warnings: list[str] = []
    assert metrics_from_json(json.loads(json.dumps(written)), "x", warnings, None, None) == {
        "metrics": {"tokens_per_s": 2.0, "world_size": 2, "x_modeled": 1.5},
        "sources": {"tokens_per_s": "measured", "world_size": "config", "x_modeled": "modeled"},
        "units": {"tokens_per_s": "tokens/s", "world_size": "ranks", "x_modeled": ""},
        "rounds": {"tokens_per_s": (1.0, 2.0, 3.0)}, "intervals": {"tokens_per_s": (iv.lo, iv.hi)}}
    assert warnings == []


def test_a_record_hands_each_metric_as_one_measurement() -> None:
    rec = Record("t", "t", "x", None, None, {}, {"tps": 100.0, "loss": 1.0}, {"tps": "measured"}, {"tps": "tokens/s"},
                 rounds={"tps": (99.0, 101.0)}, intervals={"tps": (98.0, 102.0)})
    assert rec.measurement("tps") == Measurement(100.0, "measured", "tokens/s", (99.0, 101.0), (98.0, 102.0))
    assert rec.measurement("loss") == Measurement(1.0) and rec.measurement("gone") is None


def test_a_benchmark_entry_and_its_metrics_as_written() -> None:
    """The unchecked accessors: the genai object of an entry or a fixture, each metric's source and unit as written
    (None where none), and a metric's rounds and interval verbatim (``stats.data`` for the median round time)."""
    from types import SimpleNamespace

    from pytest_genai.results.runs import benchmark_json, genai_of, recorded_metrics, recorded_spread

    genai = {"metrics": {"a": 1.0, "b": 2}, "metric_sources": {"a": "measured"}, "metric_units": {"a": "s"},
             "metric_rounds": {"a": [1.0, math.nan]}, "metric_intervals": {"a": {"lo": 0.5, "hi": 1.5, "n": 2}}}
    entry = benchmark_json("t", genai, stats={"data": [0.1]})
    assert entry == {"name": "t", "fullname": "t", "stats": {"data": [0.1]}, "extra_info": {"genai": genai}}
    assert genai_of(entry) is genai and genai_of(SimpleNamespace(extra_info={"genai": genai})) is genai
    assert genai_of({"extra_info": None}) is None and genai_of(SimpleNamespace(extra_info={"genai": []})) is None
    assert recorded_metrics(genai) == {"a": Measurement(1.0, "measured", "s"), "b": Measurement(2, None, None)}
    assert recorded_spread(entry, "a") == ([1.0, math.nan], {"lo": 0.5, "hi": 1.5, "n": 2})
    assert recorded_spread(entry, BENCH_MEDIAN_METRIC) == ([0.1], None) and recorded_spread(entry, "b") == (None, None)
