"""pytest-benchmark's conventions: ``field:N%`` thresholds and storage ids (``0003``, ``latest``) as baselines."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_genai.results.storage import is_storage_id, resolve_storage_id
from pytest_genai.cli.report import compare_main, gate_main
from pytest_genai.results.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, ReportInputError
from pytest_genai.plugin.baseline import BaselinePlugin
from pytest_genai.report.thresholds import ThresholdError, parse_thresholds

from .runfiles import bench, write_run


def timed(median: float, mean: float) -> dict:
    entry = bench("test_q[cpu]", "quant", {"bits": 8}, {"tokens_per_s": 1000.0})
    entry["stats"] = {"min": median * 0.9, "max": mean * 2, "mean": mean, "median": median, "stddev": 0.01,
                      "iqr": 0.01, "rounds": 5}
    return entry


def test_field_percent_names_pytest_benchmark_statistics() -> None:
    t = parse_thresholds("median:10%,mean:5%,tokens_per_s:3%")
    assert t.for_metric("benchmark_median_s") == pytest.approx(0.10)
    assert t.for_metric("benchmark_mean_s") == pytest.approx(0.05)
    assert t.for_metric("tokens_per_s") == pytest.approx(0.03)
    assert t.timing_fields() == {"benchmark_mean_s": "mean", "benchmark_median_s": "median"}
    with pytest.raises(ThresholdError, match="median:10%"):
        parse_thresholds("median:0.001")  # pytest-benchmark's absolute difference: thresholds here are relative


@pytest.mark.parametrize(("spec", "code"), [
    # one value a side (no rounds): past the threshold and past the point rule's 2x, so decided
    ("median:10%", EXIT_REGRESSION),  # median 1.0 -> 2.4 s: +140%
    ("median:150%", EXIT_OK),
    ("median:150%,mean:5%", EXIT_REGRESSION),  # mean 1.0 -> 3.0 s: compared only because a threshold names it
    ("median:150%,mean:250%", EXIT_OK),
])
def test_gate_applies_field_thresholds_to_round_times(tmp_path: Path, capsys, spec: str, code: int) -> None:
    base = write_run(tmp_path / "base.json", [timed(1.0, 1.0)])
    cur = write_run(tmp_path / "cur.json", [timed(2.4, 3.0)])
    assert gate_main([str(base), str(cur), "--max-regression", spec, "--no-claims"]) == code
    out = capsys.readouterr().out
    if code == EXIT_REGRESSION:
        assert ("benchmark_mean_s" in out) == ("mean:5%" in spec)


def test_unknown_field_stays_an_error(tmp_path: Path, capsys) -> None:
    base = write_run(tmp_path / "base.json", [timed(1.0, 1.0)])
    for main in (gate_main, compare_main):
        assert main([str(base), str(base), "--max-regression", "medain:10%"]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "unknown metric 'medain'" in err and "benchmark_mean_s" in err


# --- --genai-baseline 0003 / latest: pytest-benchmark storage ids ----------------------------------------------

MID = "Linux-CPython-3.11-64bit"


def saved(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / ".benchmarks" / MID
    folder.mkdir(parents=True)
    for name in names:
        write_run(folder / name, [timed(1.0, 1.0)])
    return folder


def test_storage_ids_are_run_numbers_prefixes_and_latest() -> None:
    for text in ("latest", "0003", "0003_mysave", " 0012 "):
        assert is_storage_id(text), text
    for text in ("3", "run.json", "./0003", "dir/0003", "latest.json", "", None):
        assert not is_storage_id(text), text


def test_storage_ids_resolve_like_pytest_benchmark(tmp_path: Path) -> None:
    folder = saved(tmp_path, "0001_a.json", "0002_b.json", "0010_c.json")
    (folder / "notes.json").write_text("{}")  # not a saved run: never the latest
    assert resolve_storage_id("latest", None, MID, tmp_path) == folder / "0010_c.json"
    assert resolve_storage_id("0002", "file://./.benchmarks", MID, tmp_path) == folder / "0002_b.json"
    assert resolve_storage_id("0001_a", str(tmp_path / ".benchmarks"), MID, "/") == folder / "0001_a.json"


@pytest.mark.parametrize(("ident", "names", "needle"), [
    ("0003", ("0001_a.json", "0002_b.json"), "no run 0003 in pytest-benchmark's storage {folder} (0001_a.json, "
                                             "0002_b.json)"),
    ("latest", (), "pytest-benchmark's storage {folder} holds no saved runs"),
    ("0001", ("0001_a.json", "0001_b.json"), "names 2 runs in {folder}"),
])
def test_a_missing_or_ambiguous_id_is_one_line_naming_the_storage_folder(tmp_path: Path, ident, names, needle) -> None:
    folder = saved(tmp_path, *names)
    with pytest.raises(ReportInputError) as info:
        resolve_storage_id(ident, None, MID, tmp_path)
    assert needle.format(folder=folder) in str(info.value) and "\n" not in str(info.value)


def test_only_file_storage_is_read(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="only file:// storage"):
        resolve_storage_id("latest", "elasticsearch+https://host/index/doc", MID, tmp_path)


def fake_config(tmp_path: Path, raw: str, storage: str | None = None) -> SimpleNamespace:
    options = {"genai_baseline": raw, "benchmark_storage": storage or "file://./.benchmarks"}
    return SimpleNamespace(getoption=lambda name, default=None: options.get(name, default),
                           invocation_params=SimpleNamespace(dir=tmp_path))


def test_inline_baseline_takes_a_storage_id(tmp_path: Path, monkeypatch) -> None:
    from pytest_genai.results import storage as benchmark_storage

    monkeypatch.setattr(benchmark_storage, "machine_id", lambda: MID)
    folder = saved(tmp_path, "0001_a.json", "0002_b.json")
    for raw, name in (("latest", "0002_b.json"), ("0001", "0001_a.json")):
        plugin = BaselinePlugin(fake_config(tmp_path, raw), str(tmp_path / raw), None)  # type: ignore[arg-type]
        assert plugin.baseline.source == str(folder / name)
    with pytest.raises(pytest.UsageError, match=f"--genai-baseline: 0007: no run 0007 in pytest-benchmark's storage "
                                                f"{folder}"):
        BaselinePlugin(fake_config(tmp_path, "0007"), str(tmp_path / "0007"), None)  # type: ignore[arg-type]
    # a file of that name wins, as in pytest-benchmark's own lookup
    own = write_run(tmp_path / "latest", [timed(2.0, 2.0)])
    assert BaselinePlugin(fake_config(tmp_path, "latest"), str(own), None).baseline.source == str(own)  # type: ignore[arg-type]
