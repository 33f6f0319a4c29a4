"""Cross-machine pairing: two runs of every benchmark of the suite, on machines with different data folders, thread
counts, cache dirs, working folders and rank placement, pair fully; compare/gate show those differences (never a whole
local path) and still fail on a missing pair; a hardware upgrade pairs and checks its generation claim.

``suite_configs.json`` holds one row per benchmark of a CPU main job, each its whole recorded config, written from a
real run's JSON by ``refresh_suite_configs.py`` (its docstring has the commands; last run 2026-12-01 at 23c8301).
"""
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_genai.claims import load_claims, load_metrics
from pytest_genai.identity import environment_reason, looks_like_local_path, split_config
from pytest_genai.cli.report import compare_main, gate_main, report_main
from pytest_genai.results.errors import EXIT_OK, EXIT_REGRESSION
from pytest_genai.report.gate import gate_runs
from pytest_genai.report.matching import check_unique, match_records
from pytest_genai.results.registry import metric_info_from
from pytest_genai.results.runs import run_from_json
from pytest_genai.report.thresholds import parse_thresholds

from .runfiles import run_doc

SUITE = json.loads((Path(__file__).parent / "suite_configs.json").read_text())
DATA_DIR = "/work/shared/data"
CACHE_DIR = "/root/.cache"
INFO = metric_info_from(load_metrics())
CLAIMS = [c for c in load_claims() if c.kind == "generation"]
METRICS = {"tokens_per_s": 100.0, "perplexity": 12.0}
N = len(SUITE)


def n_rows(predicate) -> int:
    """How many of the suite's benchmarks have a config for which ``predicate`` holds."""
    return sum(1 for r in SUITE if predicate(r["config"]))


def entry(row, config, *, new_format=True, device=None, metrics=None, rounds=None):
    """A benchmark as the recorder writes it: new format (config = identity, environment beside it) or as files
    written before the split (the whole config, no environment); ``rounds``: its ``metric_rounds``."""
    split = split_config(config)
    kind, generation = device or ("cpu", row["device"] or "cpu")
    genai = {"schema": "pytest-genai/1", "experiment": row["experiment"],
             "device": {"kind": kind, "generation": generation, "name": generation.upper()}, "model": row["model"],
             "config": split.identity if new_format else config, "metrics": dict(metrics or METRICS),
             "metric_sources": {}, "metric_units": {}, "claims": [], "labels": {}, "attachments": {}}
    if new_format:
        genai["environment"] = split.environment
    if rounds:
        genai["metric_rounds"] = dict(rounds)
    return {"group": None, "name": row["name"], "fullname": f"benchmarks/x.py::{row['name']}", "param": None,
            "extra_info": {"genai": genai}, "stats": {"median": 1.0}}


def rehost(config, data_dir, threads, cache_dir, cwd, placement):
    """The same benchmark's config as another machine records it."""
    out = dict(config)
    for key in ("data_source", "text_path"):
        if key in out:
            out[key] = out[key].replace(DATA_DIR, data_dir)
    if "model_path" in out:
        out["model_path"] = out["model_path"].replace(CACHE_DIR, cache_dir)
    if "threads" in out:
        out["threads"] = threads
    if "nproc" in out and "world_size" in out:  # the same world size placed on machines another way
        out["nproc"], out["nnodes"] = placement(out["world_size"])
    out["cache_dir"], out["cwd"] = cache_dir, cwd  # as a benchmark recording its folders would
    return out


def one_run(source, rows, **kw):
    return run_from_json(run_doc([entry(r, c, **kw) for r, c in rows]), source)


def test_the_suite_has_no_duplicate_identity_and_no_identity_holds_a_path() -> None:
    run = one_run("suite.json", [(r, r["config"]) for r in SUITE])
    check_unique(run)  # the split made no two benchmarks indistinguishable
    assert len(run.records) == N and N >= 40  # a real main job's benchmarks, not a handful

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    for rec in run.records:
        assert not [s for s in strings(rec.config) if looks_like_local_path(s)], rec.name
        assert "threads" not in rec.config and "data_source" not in rec.config, rec.name


HOSTS = st.fixed_dictionaries({
    "data_dir": st.sampled_from([DATA_DIR, "/mnt/ci/data", "../shared/data", "../../shared/data", "D:\\genai\\data",
                                 "~/genai-data", "/home/runner/work/pytest-genai/shared/data"]),
    "threads": st.integers(1, 256),
    "cache_dir": st.sampled_from([CACHE_DIR, "/home/ci/.cache", "C:\\Users\\me\\.cache", "/scratch/cache"]),
    "cwd": st.sampled_from(["/work/main", "/builds/genai/main", "/tmp/clone2", "C:\\src\\pytest-genai"]),
    "placement": st.sampled_from([lambda w: (w, 1), lambda w: (1, w)]),
    "new_format": st.booleans(),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTS, HOSTS)
def test_two_machines_runs_of_every_benchmark_pair_fully(a, b) -> None:
    def run(host, source):
        rows = [(r, rehost(r["config"], host["data_dir"], host["threads"], host["cache_dir"], host["cwd"],
                           host["placement"])) for r in SUITE]
        return one_run(source, rows, new_format=host["new_format"])

    base, cur = run(a, "base.json"), run(b, "cur.json")
    matching = match_records(base.records, cur.records)
    assert (len(matching.pairs), matching.only_baseline, matching.only_current) == (len(SUITE), (), ())
    result = gate_runs(base, cur, INFO, parse_thresholds(None), CLAIMS)
    assert result.passed and result.failures == ()
    found = [text for text, _ in result.comparison.environment_differences]
    if a["threads"] != b["threads"]:
        assert f"threads {a['threads']} -> {b['threads']}" in found
    for text in found:  # a data folder, cache dir or working folder is named by its last part at most
        for host in (a, b):
            for folder in (host["data_dir"], host["cache_dir"], host["cwd"]):
                assert folder not in text, text


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_values_of_the_fields_marked_environment_pair(data) -> None:
    """Property over the suite's config fields marked environment: whatever values another machine records in them
    (a path where a path was, any value in a declared key), every benchmark still pairs."""
    values = st.one_of(st.integers(0, 1 << 16), st.sampled_from(["/x/y.raw", "~/d", "../d/e", "E:\\f"]))

    def other_machine(config):
        out = dict(config)
        for key, value in config.items():
            reason = environment_reason(key, value, config)
            if reason is None:
                continue
            declared = environment_reason(key, 1, config) is not None
            out[key] = data.draw(values if declared else st.sampled_from(["/x/y.raw", "~/d", "../d/e", "E:\\f"]))
        return out

    base = one_run("a.json", [(r, r["config"]) for r in SUITE])
    cur = one_run("b.json", [(r, other_machine(r["config"])) for r in SUITE], new_format=data.draw(st.booleans()))
    matching = match_records(base.records, cur.records)
    assert len(matching.pairs) == len(SUITE) and not matching.only_baseline and not matching.only_current


def _write(path: Path, rows, **kw) -> Path:
    path.write_text(json.dumps(run_doc([entry(r, c, **kw) for r, c in rows])))
    return path


def test_gate_of_an_old_file_against_a_copy_on_another_machine_passes_and_names_what_differs(
        tmp_path: Path, capsys) -> None:
    """The issue's case: this machine's file (written before the split) against a copy whose data folder and thread
    count changed. Before: 14 of 38 benchmarks were 'one side only' and the gate passed."""
    base = _write(tmp_path / "base.json", [(r, r["config"]) for r in SUITE], new_format=False)
    moved = [(r, rehost(r["config"], "/mnt/other/data", 16, "/home/ci/.cache", "/builds/main", lambda w: (1, w)))
             for r in SUITE]
    cur = _write(tmp_path / "cur.json", moved)
    assert gate_main([str(base), str(cur)]) == EXIT_OK
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert f"**PASS**: {N} benchmark(s) compared, 0 unmatched" in out
    assert "Environment differences" in out
    threads = {c["threads"] for c in (r["config"] for r in SUITE) if c.get("threads") is not None}
    placed = n_rows(lambda c: "nproc" in c and "world_size" in c)
    (model_path,) = {c["model_path"] for c in (r["config"] for r in SUITE) if "model_path" in c}
    expected = [f"- threads {t} -> 16 ({n_rows(lambda c, t=t: c.get('threads') == t)} of {N} paired" for t in threads]
    expected += ["- data_source: folder differs (test.raw) (", "- data_source: folder differs (validation.jsonl) (",
                 f"- nproc 2 -> 1 ({placed} of {N}", f"- nnodes 1 -> 2 ({placed} of {N}",
                 f"- model_path: folder differs ({model_path.rsplit('/', 1)[-1]})",
                 f"- cache_dir (not recorded) -> .cache ({N} of {N}"]
    assert len(threads) >= 2 and placed >= 3
    for line in expected:
        assert line in out, line
    assert not re.search(r"/work/shared|/mnt/other|/home/ci|/builds/main|/root/", out)
    assert compare_main([str(base), str(cur)]) == EXIT_OK
    assert "- threads 2 -> 16" in capsys.readouterr().out


def test_a_changed_workload_is_unmatched_fails_the_gate_and_says_what_changed(tmp_path: Path, capsys) -> None:
    rows = [(r, r["config"]) for r in SUITE]
    base = _write(tmp_path / "base.json", rows)
    changed = [(r, {**c, "n_examples": 80} if r["name"].endswith("-real-boolq]") else c) for r, c in rows]
    cur = _write(tmp_path / "cur.json", changed)
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "benchmark of the baseline missing from the current run (--allow-missing accepts that); the nearest " \
           "current benchmark differs in: n_examples 40 -> 80" in out
    assert "| current only | n_examples 40 -> 80 |" in out
    assert gate_main([str(base), str(cur), "--allow-missing"]) == EXIT_OK
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| baseline only | n_examples 40 -> 80 |" in out


def test_the_report_names_data_files_by_their_last_part(tmp_path: Path, capsys) -> None:
    """A file written before the data's identity was recorded (no dataset, split, sha256 or data_origin)."""
    identity = ("dataset", "split", "sha256", "data_origin")
    rows = [(r, {k: v for k, v in r["config"].items() if k not in identity}) for r in SUITE]
    run = _write(tmp_path / "run.json", rows, new_format=False)
    assert report_main([str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "validation.jsonl" in out and "test.raw" in out
    assert "/work/shared" not in out and "/root/" not in out and "threads" not in out


def test_the_report_names_data_by_dataset_and_short_hash(tmp_path: Path, capsys) -> None:
    """With the evaluation data's identity recorded (dataset, split, sha256; data_origin in the environment)."""
    sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    rows = [(r, {**r["config"], "data_origin": "data dir", "dataset": f"{r['config']['task']}-copy", "split": "test",
                 "sha256": sha}) for r in SUITE if r["name"].startswith("test_quantized_model_quality")]
    run = _write(tmp_path / "run.json", rows)
    assert report_main([str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "boolq-copy/test @9f86d081884c" in out and sha not in out and "/work/shared" not in out


# --- hardware upgrade: same workload, two device generations, two machines -----------------------------------------

def _finetune_row():
    return next(r for r in SUITE
                if r["name"] == "test_finetune_throughput[llama-3.1-8b@tiny-random-ddp-attn_fused-fp32-mb2-s128-cpu]")


@pytest.mark.parametrize(("new_tps", "passed"), [(2700.0, True), (1500.0, False)])
def test_a_hardware_upgrade_pairs_across_machines_and_checks_the_generation_claim(new_tps, passed) -> None:
    row = _finetune_row()
    steps = (0.995, 0.998, 1.0, 1.002, 1.005)  # every timed step's tokens/s, as the suite's rows record them
    old = one_run("gaudi.json", [(row, row["config"])], device=("hpu", "gaudi"), metrics={"tokens_per_s": 1000.0},
                  new_format=False, rounds={"tokens_per_s": [1000.0 * f for f in steps]})
    moved = rehost(row["config"], "/data", 64, "/scratch/cache", "/home/habana/main", lambda w: (1, w))
    new = one_run("gaudi2.json", [(row, moved)], device=("hpu", "gaudi2"), metrics={"tokens_per_s": new_tps},
                  rounds={"tokens_per_s": [new_tps * f for f in steps]})
    result = gate_runs(old, new, INFO, parse_thresholds(None), CLAIMS)
    assert len(result.comparison.pairs) == 1 and not result.comparison.only_baseline
    (check,) = result.generation_checks
    assert check.claim_id == "A2.gen.gaudi_gaudi2" and check.speedup == pytest.approx(new_tps / 1000.0)
    assert result.passed is passed
    found = [text for text, _ in result.comparison.environment_differences]
    assert "nproc 2 -> 1" in found and "nnodes 1 -> 2" in found and "cwd (not recorded) -> main" in found


def test_a_diffusion_upgrade_a100_to_h100_pairs_and_checks_its_claim(tmp_path: Path, capsys) -> None:
    row = next(r for r in SUITE if r["name"] == "test_diffusion_training_throughput[cpu-fp32]")
    old = _write(tmp_path / "a100.json", [(row, {**row["config"], "threads": 8, "cwd": "/home/a/main"})],
                 device=("cuda", "a100-sxm4-80gb"), metrics={"images_per_s": 100.0}, new_format=False)
    new = _write(tmp_path / "h100.json", [(row, {**row["config"], "threads": 32, "cwd": "/home/b/main"})],
                 device=("cuda", "h100-sxm"), metrics={"images_per_s": 205.0})
    assert gate_main([str(old), str(new)]) == EXIT_OK
    out = re.sub(r" +", " ", capsys.readouterr().out)
    assert "| A3.gen.a100_h100 |" in out and "2.05x" in out
    assert "- threads 8 -> 32 (1 of 1 paired benchmark(s))" in out and "- cwd: folder differs (main)" in out


def test_a_config_value_1_pairs_with_1_0(tmp_path: Path, capsys) -> None:
    """One writer records ``lr: 1``, another ``1.0`` (a YAML file, a JSON round trip): the same workload, equal in
    Python, so the benchmarks pair; a real change (1 -> 2) still does not."""
    from .runfiles import bench, write_run

    base = write_run(tmp_path / "b.json", [bench("t", config={"lr": 1, "sizes": [2, 4], "fused": True},
                                                 metrics={"tokens_per_s": 100.0})])
    same = write_run(tmp_path / "c.json", [bench("t", config={"lr": 1.0, "sizes": [2.0, 4], "fused": True},
                                                 metrics={"tokens_per_s": 100.0})])
    assert gate_main([str(base), str(same)]) == EXIT_OK
    assert "1 benchmark(s) compared, 0 unmatched" in capsys.readouterr().out
    other = write_run(tmp_path / "d.json", [bench("t", config={"lr": 2.0, "sizes": [2, 4], "fused": True},
                                                  metrics={"tokens_per_s": 100.0})])
    assert gate_main([str(same), str(other)]) == 2  # nothing pairs: nothing to gate
    assert "no benchmark of" in capsys.readouterr().err


def test_failure_rows_name_the_device_of_a_benchmark_run_on_two(tmp_path: Path, capsys) -> None:
    """One test name on two devices in one run (cpu and cuda): the row that regressed says which device it was."""
    from .runfiles import bench, write_run

    def two(cuda_tps: float) -> list:
        return [bench("test_decode", config={"id": "d"}, metrics={"tokens_per_s": 100.0}, device=("cpu", "cpu")),
                bench("test_decode", config={"id": "d"}, metrics={"tokens_per_s": cuda_tps}, device=("cuda", "a100"))]

    base, cur = write_run(tmp_path / "b.json", two(1000.0)), write_run(tmp_path / "c.json", two(400.0))
    assert gate_main([str(base), str(cur), "--format", "json"]) == EXIT_REGRESSION
    doc = json.loads(capsys.readouterr().out)
    assert [(f["benchmark"], f["device"], f["metric"]) for f in doc["failures"]] == [
        ("test_decode", "cuda:a100", "tokens_per_s")]
    assert gate_main([str(base), str(cur)]) == EXIT_REGRESSION
    assert re.search(r"\| test_decode +\| cuda:a100 +\| tokens_per_s +\| dropped 60.00%", capsys.readouterr().out)
