"""Level-2 run logs, capacity sweeps and artifact devices, on folders laid out as docs/dabench.md says."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_genai.claims import load_claims
from pytest_genai.claims.check import check_value
from pytest_genai.dabench.balance import li_deepest_over_shallowest
from pytest_genai.dabench.capacity import capacity_from_outcomes, failure_reason, min_failing_layers
from pytest_genai.dabench.level2.artifacts import (ArtifactsMissing, batch_scaling_efficiency, batch_sweep,
                                                   gain_per_doubling_from, mixed_precision_speedup, read_runs,
                                                   tp_scaling_ratio)
from pytest_genai.dabench.level2.results import vendor_batch_result
from pytest_genai.dabench.results import ipu_capacity_result, rdu_compile_modes_result
from pytest_genai.dabench.readers import LayoutError
from pytest_genai.dabench.readers.cerebras import read_compile_report
from pytest_genai.dabench.readers.runlog import read_run
from pytest_genai.dabench.vendor import (read_capacity_sweep, read_capacity_sweeps, read_compile_mode_sweeps,
                                         with_artifact_devices)

from . import vendor_fixtures

OOM_LOG = ("2026-03-30 12:53:41,263 INFO:   Compiling the model. This may take a few minutes.\n"
           "2026-03-30 12:58:27,932 ERROR:  Compile failed: the model does not fit: insufficient on-chip memory "
           "for 80 layers\n")


# `-m ""`: what -k names, the slow set included (pyproject.toml's addopts leave it out of a plain run)
PYTEST = [sys.executable, "-m", "pytest", "-m", ""]

def _run(root: Path, kind: str, name: str, log: str, **settings) -> Path:
    folder = root / kind / "level2" / name
    folder.mkdir(parents=True)
    (folder / "run.log").write_text(log)
    if settings:
        (folder / "run.toml").write_text("".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in settings.items()))
    return folder


def test_cerebras_run_log_and_params(tmp_path):
    folder = _run(tmp_path, "wse", "gpt2-mixed", vendor_fixtures.cerebras_log(1107.0, csx=1))
    (folder / "params.yaml").write_text("train_input:\n  batch_size: 8\nmodel:\n  num_hidden_layers: 12\n"
                                        "  mixed_precision: True\n  fp16_type: cbfloat16\nrunconfig:\n  num_csx: 1\n")
    run = read_run(folder, "wse")
    assert (run.samples_per_s, run.precision, run.chips, run.layers, run.batch) == (1107.0, "mixed", 1, 12, 8)
    assert "GlobalRate" in run.throughput_basis and run.failure is None


def test_settings_stated_twice_must_agree_and_missing_ones_are_named(tmp_path):
    folder = _run(tmp_path, "wse", "r", vendor_fixtures.cerebras_log(1000.0, csx=2), precision="fp16", chips=1,
                  layers=12)
    with pytest.raises(LayoutError, match=r"run.toml: expected chips = 2 as the run's own files state it"):
        read_run(folder, "wse")
    folder = _run(tmp_path, "ipu", "r", vendor_fixtures.poptorch_log([10.0, 50.0]), precision="fp32", chips=4)
    with pytest.raises(LayoutError, match=r"run.toml: expected a 'layers' setting"):
        read_run(folder, "ipu")


def test_poptorch_log_skips_the_first_step_and_sambaflow_reads_its_summary(tmp_path):
    folder = _run(tmp_path, "ipu", "r", vendor_fixtures.poptorch_log([3.0, 120.0, 122.0, 121.0]),
                  precision="mixed", chips=4, layers=8)
    assert read_run(folder, "ipu").samples_per_s == 121.0
    folder = _run(tmp_path, "rdu", "r", vendor_fixtures.sambaflow_log(1234.5), precision="fp32", chips=2, layers=24)
    assert read_run(folder, "rdu").samples_per_s == 1234.5


@pytest.mark.parametrize("later", ["throughput: 52,000 tokens/s\n", "Throughput: 3.2 ms/step\n"])
def test_a_sambaflow_throughput_line_in_another_unit_is_not_read_as_samples(tmp_path, later):
    """The last 'throughput: N' of the log was taken whatever followed N: a tokens/s or ms/step figure became
    samples/s, and with it the RDU TP, precision and batch ratios."""
    folder = _run(tmp_path, "rdu", "r", vendor_fixtures.sambaflow_log(1234.5) + later, precision="fp32", chips=2,
                  layers=24)
    assert read_run(folder, "rdu").samples_per_s == 1234.5
    only = _run(tmp_path, "rdu", "only", later, precision="fp32", chips=2, layers=24)
    with pytest.raises(LayoutError, match="'throughput: X samples/s' or 'samples_per_sec: X'"):
        read_run(only, "rdu")


@pytest.mark.parametrize("later", ["{'eval_samples_per_sec': 410.7}\n", "eval throughput: 410.7 samples/s\n",
                                   "throughput: 47.6 samples/s/chip\n", "inference throughput: 9,000 samples/s\n"])
def test_evaluation_and_per_chip_throughputs_are_not_the_training_throughput(tmp_path, later):
    """A SambaFlow log's eval, inference or per-chip figure after the training one was taken as the run's training
    samples/s (the last match won) and entered the TP, precision and batch ratios."""
    log = vendor_fixtures.sambaflow_log(1234.5) + "{'training_samples_per_sec': 1234.5}\n" + later
    folder = _run(tmp_path, "rdu", "r", log, precision="fp32", chips=2, layers=24)
    assert read_run(folder, "rdu").samples_per_s == 1234.5


def test_a_poptorch_log_of_one_step_is_refused_not_read_with_its_graph_load(tmp_path):
    folder = _run(tmp_path, "ipu", "r", vendor_fixtures.poptorch_log([3.1]), precision="mixed", chips=4, layers=8)
    with pytest.raises(LayoutError, match=r"two or more per-step 'throughput: X samples/sec' lines \(the first step "
                                          r"includes the graph load"):
        read_run(folder, "ipu")


def test_a_log_in_an_unknown_format_names_the_file(tmp_path):
    folder = _run(tmp_path, "wse", "r", "step 100 loss 2.0 speed 12 it/s\n", precision="fp16", chips=1, layers=2)
    with pytest.raises(LayoutError, match=rf"{folder / 'run.log'}: expected '\| Train Device=CSX"):
        read_run(folder, "wse")


def test_an_oom_run_is_a_result_not_an_error(tmp_path):
    folder = _run(tmp_path, "ipu", "r", "Graph compilation: 40%\npoptorch.Error: Out of memory on tile 1203: "
                  "624.1 KB required\n", precision="fp32", chips=1, layers=10)
    run = read_run(folder, "ipu")
    assert run.samples_per_s is None and run.failure.startswith("out_of_memory: poptorch.Error: Out of memory")


def test_rdu_tp_and_mixed_precision_from_runs(tmp_path):
    for name, chips, precision, rate in (("tp2-fp32", 2, "fp32", 1000.0), ("tp4-fp32", 4, "fp32", 600.0),
                                         ("tp2-mixed", 2, "mixed", 1343.0)):
        _run(tmp_path, "rdu", name, vendor_fixtures.sambaflow_log(rate), precision=precision, chips=chips, layers=24)
    runs = read_runs(tmp_path, "rdu")
    tp = tp_scaling_ratio(runs)
    assert tp.value == pytest.approx(0.6) and (tp.run.name, tp.baseline.name) == ("tp4-fp32", "tp2-fp32")
    mp = mixed_precision_speedup(runs, "rdu")
    assert mp.value == pytest.approx(1.343) and mp.baseline.precision == "fp32"
    with pytest.raises(ArtifactsMissing, match="mixed and fp16"):
        mixed_precision_speedup(runs, "wse")  # the WSE's baseline is fp16: fp32 training is impossible there
    with pytest.raises(ArtifactsMissing, match=r"wse/level2/<run name>/ folders from Cerebras Model Zoo"):
        read_runs(tmp_path, "wse")


def test_a_repeated_comparison_shows_the_medians_its_ratio_is_taken_from(tmp_path):
    """Five runs a side: samples/s and the baseline's are the medians (with each side's runs as rounds), so the pair
    shown divides to the ratio judged; the first run by folder name was shown before (0.5 beside a 0.6 ratio)."""
    from pytest_genai.dabench.level2.results import vendor_precision_result

    for r, (mixed, fp32) in enumerate(((50.0, 100.0), (60.0, 95.0), (61.0, 99.0), (62.0, 101.0), (70.0, 103.0))):
        _run(tmp_path, "rdu", f"{chr(97 + r)}-mixed", vendor_fixtures.sambaflow_log(mixed), precision="mixed",
             chips=2, layers=24)
        _run(tmp_path, "rdu", f"{chr(97 + r)}-fp32", vendor_fixtures.sambaflow_log(fp32), precision="fp32",
             chips=2, layers=24)
    comparison = mixed_precision_speedup(read_runs(tmp_path, "rdu"), "rdu")
    result = vendor_precision_result(comparison, "rdu")
    m = result.metrics
    assert m["samples_per_s"].value == 61.0 and m["baseline_samples_per_s"].value == 100.0
    ratio = m["samples_per_s"].value / m["baseline_samples_per_s"].value
    assert m["mixed_precision_speedup"].value == pytest.approx(ratio)
    assert sorted(m["samples_per_s"].rounds) == [50.0, 60.0, 61.0, 62.0, 70.0]


def test_failure_reasons_and_capacity_outcomes():
    assert failure_reason(OOM_LOG).startswith("out_of_memory:")
    assert failure_reason("INFO: Compile was successful!\n") is None
    assert failure_reason("ERROR: Compilation failed with 3 errors").startswith("compile_failed:")
    outcome = capacity_from_outcomes({16: None, 64: None, 72: None, 76: "out_of_memory: x", 128: "out_of_memory: y"})
    assert (outcome.max_fitting, outcome.first_failing, outcome.monotone) == (72, 76, True)
    assert capacity_from_outcomes({10: "out_of_memory: z"}).max_fitting == 0


def test_wse_capacity_sweep_from_reports_and_failed_compiles(tmp_path):
    sweep = tmp_path / "wse" / "capacity"
    for layers in (8, 32, 64, 72):
        folder = sweep / f"L{layers}-h768-a12-s1024-b8-fp16-train"
        folder.mkdir(parents=True)
        (folder / "compile_report.txt").write_text(vendor_fixtures.compile_report(layers))
    for layers in (76, 96):
        folder = sweep / f"L{layers}-h768-a12-s1024-b8-fp16-train"
        folder.mkdir(parents=True)
        (folder / "compile.log").write_text(OOM_LOG)
    group, outcome, folders = read_capacity_sweep(tmp_path, "wse")
    assert group == "h768-a12-s1024-b8-fp16-train"
    assert (outcome.max_fitting, outcome.first_failing) == (72, 76)
    at_max = read_compile_report(folders[72] / "compile_report.txt")  # allocation and LI at the largest count
    assert at_max.allocation_ratio == pytest.approx(0.92) and at_max.extra["layer_kernels"] == 144
    (sweep / "L80-h768-a12-s1024-b8-fp16-train").mkdir()
    with pytest.raises(LayoutError, match="L80-h768.*expected compile_report.txt, or a \\*.log"):
        read_capacity_sweep(tmp_path, "wse")


def test_artifact_devices_only_where_the_folder_exists_and_no_sdk(tmp_path, monkeypatch):
    from pytest_genai.devices.probes import ProbeResult

    monkeypatch.delenv("GENAI_WSE_GENERATION", raising=False)
    (tmp_path / "wse").mkdir()
    probes = {"wse": lambda: ProbeResult("wse", reason="no SDK"), "rdu": lambda: ProbeResult("rdu", reason="no SDK")}
    with_artifact_devices(probes, tmp_path)
    wse, rdu = probes["wse"](), probes["rdu"]()
    assert wse.available and wse.devices[0].generation == "wse-2" and "artifacts in" in wse.devices[0].name
    assert not rdu.available  # no rdu/ folder: still absent, with the live probe's reason
    with_artifact_devices(probes, None)  # no --genai-dabench-profiles: nothing changes


def test_repeated_runs_give_rounds(tmp_path):
    for name, precision, rate in (("a-fp32", "fp32", 100.0), ("a-mixed", "mixed", 120.0), ("b-fp32", "fp32", 110.0),
                                  ("b-mixed", "mixed", 137.5), ("c-fp32", "fp32", 90.0)):
        _run(tmp_path, "ipu", name, vendor_fixtures.poptorch_log([1.0, rate]), precision=precision, chips=4, layers=8)
    mp = mixed_precision_speedup(read_runs(tmp_path, "ipu"), "ipu")
    assert mp.rounds == pytest.approx((1.2, 1.25))  # a-mixed/a-fp32, b-mixed/b-fp32 (by folder name)
    assert mp.value == pytest.approx(128.75 / 100.0)  # medians: (120, 137.5) over (90, 100, 110)


def test_benchmark_checks_rdu_tp_from_run_logs_without_the_sdk(tmp_path):
    """End to end: the rdu kind is an artifact device (benchmarks/conftest.py), test_vendor_tp_scaling reads the run
    logs and judges B2.rdu_tp_2_to_4_chips on the repeated runs' interval (5 runs: with fewer, the median's interval
    covers under 90% and decides nothing, tests/claims/test_verdicts.py)."""
    import json
    import subprocess
    import sys

    for r in range(5):
        _run(tmp_path, "rdu", f"r{r}-tp2", vendor_fixtures.sambaflow_log(1000.0 + r), precision="fp32", chips=2,
             layers=24)
        _run(tmp_path, "rdu", f"r{r}-tp4", vendor_fixtures.sambaflow_log(600.0 + 2 * r), precision="fp32", chips=4,
             layers=24)
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [*PYTEST, "benchmarks/test_dabench_level2.py", "-k", "vendor_tp_scaling", "-q",
         "-p", "no:cacheprovider", f"--genai-dabench-profiles={tmp_path}", f"--benchmark-json={out}"],
        cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (bench,) = json.loads(out.read_text())["benchmarks"]
    genai = bench["extra_info"]["genai"]
    assert genai["device"]["generation"] == "sn30" and "artifacts in" in genai["device"]["name"]
    assert genai["metrics"]["scaling_throughput_ratio"] == pytest.approx(604.0 / 1002.0)
    (verdict,) = genai["claims"]
    assert verdict["id"] == "B2.rdu_tp_2_to_4_chips" and verdict["verdict"] == "pass"


def test_benchmark_checks_the_ipu_bound_from_an_execution_profile_without_the_sdk(tmp_path):
    """End to end: the ipu kind is an artifact device; test_level1_ipu reads a config's graph profile and its
    execution profile (a fake ``pva`` on PYTHONPATH opens our real-layout reports) and judges B1.ipu_memory_bound;
    a config with the graph profile only records the bound as not judged, naming the missing file."""
    import json
    import os
    import subprocess
    import sys

    profiles = tmp_path / "profiles"
    memory_bound = "L2-h768-a12-s1024-b8-fp16-train"
    graph_only = "L4-h768-a12-s1024-b8-fp16-train"
    vendor_fixtures.write_pop(profiles / "ipu" / memory_bound / "profile.pop", vendor_fixtures.graph_profile())
    vendor_fixtures.write_pop(profiles / "ipu" / memory_bound / "execution" / "profile.pop",
                              vendor_fixtures.execution_profile(compute=1000, exchange=1500, stream=400))
    vendor_fixtures.write_pop(profiles / "ipu" / graph_only / "profile.pop", vendor_fixtures.graph_profile())
    fake = vendor_fixtures.write_fake_pva(tmp_path / "fake_pva")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(fake), os.environ.get("PYTHONPATH")]))}
    env.pop("GENAI_IPU_GENERATION", None)
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [*PYTEST, "benchmarks/test_dabench_level1.py", "-k", "test_level1_ipu and h768", "-q",
         "-p", "no:cacheprovider", f"--genai-dabench-profiles={profiles}", f"--benchmark-json={out}"],
        cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    by_config = {b["extra_info"]["genai"]["config"]["id"]: b["extra_info"]["genai"]
                 for b in json.loads(out.read_text())["benchmarks"]}
    assert set(by_config) == {memory_bound, graph_only}
    judged = by_config[memory_bound]
    assert judged["device"]["generation"] == "bow-ipu" and "artifacts in" in judged["device"]["name"]
    assert judged["metrics"]["allocation_ratio"] == pytest.approx(0.75)  # the graph profile still read
    assert judged["metrics"]["compute_bound_measured"] == 0.0
    assert judged["metric_sources"]["compute_bound_measured"] == "measured"
    (verdict,) = judged["claims"]
    assert verdict["id"] == "B1.ipu_memory_bound" and verdict["verdict"] == "pass"
    unjudged = by_config[graph_only]
    assert unjudged["claims"] == [] and "compute_bound_measured" not in unjudged["metrics"]
    assert f"ipu/{graph_only}/execution/profile.pop" in unjudged["labels"]["bound_not_judged"]
    assert "autoReport.outputExecutionProfile" in unjudged["labels"]["bound_not_judged"]


# --- IPU capacity over several configs; batch sweeps -----------------------------------------------------------------

CLAIMS = {c.id: c for c in load_claims()}
H_SMALL, H_MID, H_LARGE = ("h768-a12-s1024-b8-fp32-train", "h1024-a16-s1024-b8-fp32-train",
                            "h2048-a16-s1024-b8-fp32-train")


def _verdict(claim_id: str, result) -> str:
    claim = CLAIMS[claim_id]
    m = result.metrics[claim.metric]
    return check_value(claim, m.value).verdict if m.rounds is None else _interval_verdict(claim, m.rounds)


def _interval_verdict(claim, rounds) -> str:
    from pytest_genai.stats import median_interval

    return check_value(claim, sorted(rounds)[len(rounds) // 2], median_interval(list(rounds))).verdict


def test_ipu_capacity_per_config_and_the_smallest_failing_count(tmp_path):
    write = vendor_fixtures.write_ipu_capacity_sweep
    # The large config compiles up to 8 layers and fails at 10; a middle one fails at 16; the small one never.
    write(tmp_path, {H_SMALL: None, H_MID: 12, H_LARGE: 8})
    sweeps = read_capacity_sweeps(tmp_path, "ipu")
    assert set(sweeps) == {H_SMALL, H_MID, H_LARGE} and sweeps[H_MID][0].first_failing == 16
    small, large = sweeps[H_SMALL][0], sweeps[H_LARGE][0]
    assert (small.max_fitting, small.first_failing) == (16, None)
    assert (large.max_fitting, large.first_failing, large.monotone) == (8, 10, True)
    assert large.attempts[-1][2].startswith("out_of_memory: ")  # Poplar's "Out of memory" is a result
    assert min_failing_layers({g: o for g, (o, _) in sweeps.items()}) == (10, H_LARGE)
    result = ipu_capacity_result(sweeps)
    assert result.metrics["min_failing_layers"].value == 10 and result.labels["min_failing_config"] == H_LARGE
    assert result.metrics["capacity_failing_configs"].value == 2
    assert _verdict("B1.ipu_fails_at_10_layers", result) == "pass"
    with pytest.raises(LayoutError, match="one sweep"):
        read_capacity_sweep(tmp_path, "ipu")  # the WSE's single-sweep reader refuses two configs


def test_ipu_capacity_claim_fails_when_every_config_compiles_past_10(tmp_path):
    vendor_fixtures.write_ipu_capacity_sweep(tmp_path, {H_SMALL: None, H_LARGE: 12})  # fails first at 16
    result = ipu_capacity_result(read_capacity_sweeps(tmp_path, "ipu"))
    assert result.metrics["min_failing_layers"].value == 16
    assert _verdict("B1.ipu_fails_at_10_layers", result) == "fail"


def test_ipu_capacity_without_any_failure_is_not_judged(tmp_path):
    vendor_fixtures.write_ipu_capacity_sweep(tmp_path, {H_SMALL: None})
    result = ipu_capacity_result(read_capacity_sweeps(tmp_path, "ipu"))
    assert "min_failing_layers" not in result.metrics and "not judged" in result.labels["capacity_note"]


def test_batch_scaling_efficiency_and_gain_per_doubling():
    assert batch_scaling_efficiency((8, 16, 64), (100.0, 195.0, 720.0)) == pytest.approx(0.9)
    assert batch_scaling_efficiency((64, 8), (720.0, 100.0)) == pytest.approx(0.9)  # order of the sweep is free
    # 200 -> 800 is two doublings: 1.21x overall is 1.1x per doubling; batches below 200 do not count.
    assert gain_per_doubling_from((50, 200, 400, 800), (10.0, 100.0, 105.0, 121.0)) == pytest.approx(1.1)
    with pytest.raises(ArtifactsMissing, match=">= 200"):
        gain_per_doubling_from((50, 100, 200), (1.0, 2.0, 3.0))


def test_rdu_batch_sweep_near_linear_passes_and_saturating_fails(tmp_path):
    near = {8: 1000.0, 16: 1960.0, 32: 3800.0, 64: 7400.0}  # 7.4x for 8x batch: 0.925
    vendor_fixtures.write_batch_sweep(tmp_path / "near", "rdu", near)
    _run(tmp_path / "near", "rdu", "other-layers", vendor_fixtures.sambaflow_log(9.0), precision="fp32", chips=2,
         layers=12, batch=8)  # one batch at another depth: not a sweep, left out
    sweep = batch_sweep(read_runs(tmp_path / "near", "rdu"))
    assert sweep.batches == (8, 16, 32, 64) and len(sweep.rounds) == 5
    result = vendor_batch_result(sweep)
    assert result.metrics["batch_scaling_efficiency"].value == pytest.approx(7400.0 / 1000.0 / 8)
    assert "batch_gain_per_doubling_from_200" not in result.metrics  # no batch >= 200 swept
    assert _verdict("B2.rdu_batch_near_linear", result) == "pass"
    saturating = {8: 1000.0, 16: 1700.0, 32: 2400.0, 64: 2800.0}  # 2.8x for 8x batch: 0.35
    vendor_fixtures.write_batch_sweep(tmp_path / "sat", "rdu", saturating)
    result = vendor_batch_result(batch_sweep(read_runs(tmp_path / "sat", "rdu")))
    assert _verdict("B2.rdu_batch_near_linear", result) == "fail"


def test_ipu_batch_sweep_and_a_single_batch_is_missing(tmp_path):
    vendor_fixtures.write_batch_sweep(tmp_path, "ipu", {4: 40.0, 8: 79.0, 16: 150.0}, precision="mixed", chips=4,
                                      layers=8)
    result = vendor_batch_result(batch_sweep(read_runs(tmp_path, "ipu")))
    assert result.metrics["batch_scaling_efficiency"].value == pytest.approx(150.0 / 40.0 / 4, rel=1e-3)
    assert _verdict("B2.ipu_batch_near_linear", result) == "pass"
    one = tmp_path / "one"
    vendor_fixtures.write_batch_sweep(one, "ipu", {8: 79.0})
    with pytest.raises(ArtifactsMissing, match="two or more batch sizes"):
        batch_sweep(read_runs(one, "ipu"))


def test_wse_batch_plateau_from_params_yaml(tmp_path):
    plateau = {50: 300.0, 100: 560.0, 200: 1000.0, 400: 1060.0, 800: 1100.0}  # 1.1x over two doublings
    vendor_fixtures.write_batch_sweep(tmp_path / "flat", "wse", plateau, precision="mixed", chips=1, layers=24)
    runs = read_runs(tmp_path / "flat", "wse")
    assert {r.batch for r in runs} == set(plateau) and runs[0].precision == "mixed"  # from params.yaml
    result = vendor_batch_result(batch_sweep(runs))
    assert result.metrics["batch_gain_per_doubling_from_200"].value == pytest.approx((1100 / 1000) ** 0.5, rel=1e-3)
    assert _verdict("B2.wse2_batch_plateau", result) == "pass"
    linear = {50: 300.0, 100: 600.0, 200: 1200.0, 400: 2350.0, 800: 4600.0}  # still ~1.96x per doubling
    vendor_fixtures.write_batch_sweep(tmp_path / "lin", "wse", linear, precision="mixed", chips=1, layers=24)
    result = vendor_batch_result(batch_sweep(read_runs(tmp_path / "lin", "wse")))
    assert _verdict("B2.wse2_batch_plateau", result) == "fail"


def test_a_batch_sweep_is_not_mixed_into_the_precision_comparison(tmp_path):
    vendor_fixtures.write_batch_sweep(tmp_path, "rdu", {8: 1000.0, 64: 7000.0}, repeats=1)
    _run(tmp_path, "rdu", "mixed-b8", vendor_fixtures.sambaflow_log(1343.0), precision="mixed", chips=2, layers=24,
         batch=8)
    mp = mixed_precision_speedup(read_runs(tmp_path, "rdu"), "rdu")
    assert mp.value == pytest.approx(1.343) and mp.baseline.batch == 8  # not the median over batches 8 and 64


BALANCED, SKEWED = [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 2.0]  # LI (mean / max) 1.0 and 0.625


def test_li_deepest_over_shallowest():
    assert li_deepest_over_shallowest({24: 0.6, 2: 1.0, 12: None}) == pytest.approx(0.6)  # missing LI left out
    with pytest.raises(ValueError, match="two or more layer counts"):
        li_deepest_over_shallowest({2: 1.0, 12: None})


def test_rdu_compile_modes_o3_balance_falls_passes_and_a_flat_o3_fails(tmp_path):
    falls = {"o0": {2: BALANCED, 24: BALANCED}, "o1": {2: BALANCED, 12: BALANCED, 24: BALANCED},
             "o3": {2: BALANCED, 12: [1.0, 1.0, 1.0, 1.3], 24: SKEWED}}
    vendor_fixtures.write_compile_mode_sweep(tmp_path / "falls", falls)
    group, sweeps = read_compile_mode_sweeps(tmp_path / "falls")
    assert group == "h768-a12-s1024-b8-bf16-train" and set(sweeps) == {"o0", "o1", "o3"}
    assert sweeps["o3"][24].load_imbalance == pytest.approx(0.625)  # two chips per section folded, not 8 sections
    result = rdu_compile_modes_result(sweeps)
    assert result.metrics["o3_li_deepest_over_shallowest"].value == pytest.approx(0.625)
    assert "o0: L2 1, L24 1" in result.labels["li_by_compile_mode"]
    assert len(result.attachments["compile_mode_sweep"]) == 8  # 2 + 3 + 3 (mode, layers) points
    assert _verdict("B1.rdu_o3_balance_falls", result) == "pass"
    flat = {"o3": {2: BALANCED, 24: [1.0, 1.0, 1.0, 1.01]}}
    vendor_fixtures.write_compile_mode_sweep(tmp_path / "flat", flat)
    result = rdu_compile_modes_result(read_compile_mode_sweeps(tmp_path / "flat")[1])
    assert _verdict("B1.rdu_o3_balance_falls", result) == "fail"


def test_rdu_compile_modes_without_an_o3_curve_or_in_an_unknown_layout(tmp_path):
    vendor_fixtures.write_compile_mode_sweep(tmp_path, {"o1": {2: BALANCED, 24: SKEWED}, "o3": {2: BALANCED}})
    result = rdu_compile_modes_result(read_compile_mode_sweeps(tmp_path)[1])
    assert "o3_li_deepest_over_shallowest" not in result.metrics and "O3" in result.labels["o3_trend_not_judged"]
    (tmp_path / "rdu" / "compile_modes" / "O2").mkdir()
    with pytest.raises(LayoutError, match="O2: expected a compile-mode folder named one of o0, o1, o3"):
        read_compile_mode_sweeps(tmp_path)


def test_benchmarks_check_ipu_capacity_and_batch_sweeps_without_the_sdks(tmp_path):
    """End to end: ipu, rdu and wse are artifact devices; test_capacity_ipu judges B1.ipu_fails_at_10_layers on a
    sweep where one config fails at 10 (pass), test_compile_modes_rdu judges B1.rdu_o3_balance_falls on O3 section
    reports whose LI falls from 1.0 to 0.625 (pass), test_vendor_batch_scaling judges B2.rdu_batch_near_linear on a
    near-linear sweep (pass) and B2.wse2_batch_plateau on a WSE sweep that keeps gaining past batch 200 (fail: the
    run exits 1 and the JSON says so)."""
    import json
    import os
    import subprocess
    import sys

    profiles = tmp_path / "profiles"
    vendor_fixtures.write_ipu_capacity_sweep(profiles, {H_SMALL: None, H_LARGE: 8})
    vendor_fixtures.write_batch_sweep(profiles, "rdu", {8: 1000.0, 16: 1960.0, 32: 3800.0, 64: 7400.0})
    vendor_fixtures.write_compile_mode_sweep(profiles, {"o1": {2: BALANCED, 24: BALANCED}, "o3": {2: BALANCED,
                                                                                                24: SKEWED}})
    vendor_fixtures.write_batch_sweep(profiles, "wse", {100: 600.0, 200: 1200.0, 400: 2350.0, 800: 4600.0},
                                      precision="mixed", chips=1)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_GENERATION")}
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [*PYTEST, "benchmarks/test_dabench_level1.py", "benchmarks/test_dabench_level2.py",
         "-k", "test_capacity_ipu or test_compile_modes_rdu or test_vendor_batch_scaling", "-q", "-p", "no:cacheprovider",
         f"--genai-dabench-profiles={profiles}", f"--benchmark-json={out}"],
        cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 failed" in proc.stdout and "3 passed" in proc.stdout, proc.stdout[-3000:]
    verdicts = {}
    for bench in json.loads(out.read_text())["benchmarks"]:
        genai = bench["extra_info"]["genai"]
        assert "artifacts in" in genai["device"]["name"]
        verdicts.update({v["id"]: v["verdict"] for v in genai["claims"]})
    assert verdicts == {"B1.ipu_fails_at_10_layers": "pass", "B1.rdu_o3_balance_falls": "pass",
                        "B2.rdu_batch_near_linear": "pass", "B2.wse2_batch_plateau": "fail"}


def test_benchmarks_take_a_log_only_capacity_count_and_unreported_pcu_cells_without_erroring(tmp_path):
    """End to end through benchmarks/test_dabench_level1.py: a WSE sweep whose largest compiled count kept only its
    log ('Compile was successful', no compile_report.txt) records the capacity without that count's allocation; a
    SambaTune report whose PCU utilization cells are all '--' records the sections without an allocation verdict.
    Both were errors (a missing file; a check of an unrecorded metric)."""
    import json
    import subprocess
    import sys

    sweep = tmp_path / "wse" / "capacity"
    (sweep / "L64-h768-a12-s1024-b8-fp16-train").mkdir(parents=True)
    (sweep / "L64-h768-a12-s1024-b8-fp16-train" / "compile_report.txt").write_text(vendor_fixtures.compile_report(64))
    (sweep / "L72-h768-a12-s1024-b8-fp16-train").mkdir()
    (sweep / "L72-h768-a12-s1024-b8-fp16-train" / "compile.log").write_text(vendor_fixtures.cerebras_log(100.0))
    (sweep / "L80-h768-a12-s1024-b8-fp16-train").mkdir()
    (sweep / "L80-h768-a12-s1024-b8-fp16-train" / "compile.log").write_text(OOM_LOG)
    cfg = "L4-h768-a12-s1024-b8-fp16-train"
    (tmp_path / "rdu" / cfg).mkdir(parents=True)
    (tmp_path / "rdu" / cfg / "section_report.csv").write_text(vendor_fixtures.section_report([
        ("0", "0", "Forward", "0.002", "40.0", "--"), ("1", "0", "Backward", "0.004", "60.0", "--")]))
    # with PCU figures: the claim reads the highest section's (the authors' statistic), the weighted mean beside it
    judged = "L2-h768-a12-s1024-b8-fp16-train"
    (tmp_path / "rdu" / judged).mkdir(parents=True)
    (tmp_path / "rdu" / judged / "section_report.csv").write_text(vendor_fixtures.section_report([
        ("0", "0", "Forward", "0.002", "40.0", "50%"), ("1", "0", "Backward", "0.004", "60.0", "20%")]))
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [*PYTEST, "benchmarks/test_dabench_level1.py", "-k",
         f"capacity_wse or ({cfg} and rdu) or ({judged} and rdu)",
         "-q", "-p", "no:cacheprovider", f"--genai-dabench-profiles={tmp_path}", f"--benchmark-json={out}"],
        cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {b["name"]: b["extra_info"]["genai"] for b in json.loads(out.read_text())["benchmarks"]}
    capacity = next(g for name, g in rows.items() if "capacity_wse" in name)
    assert capacity["metrics"]["max_layers"] == 72 and "allocation_ratio" not in capacity["metrics"]
    rdu = next(g for name, g in rows.items() if "level1_rdu" in name and cfg in name)
    assert not {"allocation_ratio", "allocation_ratio_section_max", "allocation_ratio_latency_weighted"} & set(
        rdu["metrics"]) and "B1.rdu_allocation" not in {c["id"] for c in rdu["claims"]}
    rdu = next(g for name, g in rows.items() if "level1_rdu" in name and judged in name)
    assert rdu["metrics"]["allocation_ratio_section_max"] == 0.5
    assert abs(rdu["metrics"]["allocation_ratio_latency_weighted"] - (0.002 * 0.5 + 0.004 * 0.2) / 0.006) < 1e-12
    claim = next(c for c in rdu["claims"] if c["id"] == "B1.rdu_allocation")
    assert claim["metric"] == "allocation_ratio_section_max" and claim["verdict"] == "pass"
