"""Plugin behaviour, through pytester: markers, device selection and skips, claims, JSON contract."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_genai

DEVICE_TEST = """
import pytest

@pytest.mark.claims("A1.compression_ratio", kinds=("cpu", "cuda", "hpu"))
def test_runs(benchmark, genai, genai_device):
    genai.start(experiment="quant", device=genai_device, config={"mode": "real"}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=2)
    genai.metric("compression_ratio", 3.0)
    genai.check("A1.compression_ratio")
"""

FAKE_HPU_CONFTEST = """
from pytest_genai.devices import Device, ProbeResult, get_spec

def pytest_genai_probes(config, probes):
    probes["hpu"] = lambda: ProbeResult("hpu", (Device("hpu", 0, "Fake Gaudi2 for tests", "gaudi2", get_spec("gaudi2")),))
"""


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    for marker in ("cpu", "cuda", "hpu", "wse", "rdu", "ipu", "quant", "finetune", "diffusion", "dabench"):
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}:*"])


def test_fixtures_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["*genai_device*", "*hpu*", "*genai *"])


def test_strict_markers_accept_device_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.hpu\n@pytest.mark.quant\ndef test_a():\n    pass\n")
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)


def test_minus_m_hpu_selects_hpu_items_and_skips_them_with_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-m", "hpu", "-rs", "--benchmark-json", "out.json", "-p", "no:cacheprovider")
    assert result.ret == 0
    result.assert_outcomes(skipped=1, deselected=5)
    result.stdout.fnmatch_lines(["*hpu: not available*to enable:*Gaudi*"])
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["benchmarks"] == []
    assert "hpu" in data["machine_info"]["genai"]["absent"]


def test_cpu_variant_runs_and_writes_the_contract(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-m", "cpu", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1, deselected=5)
    data = json.loads((pytester.path / "out.json").read_text())
    genai = data["benchmarks"][0]["extra_info"]["genai"]
    assert genai["schema"] == "pytest-genai/1"
    assert genai["device"]["kind"] == "cpu"
    assert genai["metrics"] == {"compression_ratio": 3.0}
    assert genai["metric_sources"] == {"compression_ratio": "measured"}
    assert genai["claims"][0]["verdict"] == "pass"
    cpu = [d for d in data["machine_info"]["genai"]["devices"] if d["kind"] == "cpu"][0]
    assert "measured" in cpu["spec"]["source"] and cpu["spec"]["peak_tflops"]["fp32"] > 0
    result.stdout.fnmatch_lines(["*pytest-genai claims*", "*A1.compression_ratio*cpu*PASS*"])


def test_device_made_present_by_hook_is_selected_and_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_HPU_CONFTEST)
    pytester.makepyfile("""
def test_on_hpu(hpu):
    assert hpu.generation == "gaudi2" and hpu.spec.peak_tflops("bf16") == 432.0

def test_param(genai_device):
    assert genai_device.kind == "hpu"
""")
    result = pytester.runpytest("-m", "hpu", "--genai-devices", "hpu,cuda")
    result.assert_outcomes(passed=2, deselected=1)


BROKEN_HPU_CONFTEST = """
def pytest_genai_probes(config, probes):
    def broken():
        raise RuntimeError("driver exploded")
    probes["hpu"] = broken
"""


def test_probe_that_raises_makes_the_kind_broken_its_tests_error_and_the_rest_run(pytester: pytest.Pytester) -> None:
    """DECISIONS, probes: an SDK that imports but whose probe raises is broken, not absent; the session goes on."""
    pytester.makeconftest(BROKEN_HPU_CONFTEST)
    pytester.makepyfile("def test_a(hpu):\n    pass\n\ndef test_b(cpu):\n    pass\n\n"
                        "def test_c(ipu):\n    pass\n")
    result = pytester.runpytest("-rsE", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1, skipped=1)  # hpu errors, cpu runs, an absent SDK (ipu) still skips
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        'genai: hpu broken (RuntimeError: driver exploded): its tests error; repair it or deselect them with -m "not hpu"',
    ])
    result.stdout.fnmatch_lines(["*ERROR at setup of test_a*",  # one line, no traceback
                                 'hpu broken (RuntimeError: driver exploded): the hpu probe failed; *'
                                 '-m "not hpu"',
                                 "*short test summary info*"])
    result.stdout.fnmatch_lines(["SKIPPED *ipu: not available*"])
    assert "Traceback" not in result.stdout.str()


def test_a_kind_whose_probe_a_hook_removed_skips_naming_why(pytester: pytest.Pytester) -> None:
    """Asked for through request.getfixturevalue, its skip reason was the bare KeyError text 'ipu'."""
    pytester.makeconftest("def pytest_genai_probes(config, probes):\n    del probes['ipu']\n")
    pytester.makepyfile("def test_a(request):\n    request.getfixturevalue('ipu')\n")
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *ipu: no probe registered*"])


def test_minus_m_on_a_broken_kind_does_not_go_green_having_run_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BROKEN_HPU_CONFTEST)
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-m", "hpu", "--benchmark-json", "out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1, deselected=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["machine_info"]["genai"]["broken"] == {"hpu": "RuntimeError: driver exploded"}
    # deselecting the broken kind, as the message says, gives a clean run of the rest
    result = pytester.runpytest("-m", "cpu and not hpu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=5)
    assert "hpu broken" not in result.stdout.str()  # the probe ran at collection, but no selected test needs hpu


def test_other_plugins_cuda_fixture_is_not_ours(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import pytest\n@pytest.fixture\ndef cuda():\n    return 'theirs'\n")
    pytester.makepyfile("def test_a(cuda):\n    assert cuda == 'theirs'\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_broken_claim_fails_with_message_and_report_mode_records_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import pytest

@pytest.mark.claims("A1.ppl_ratio", kinds=("cpu",))
def test_ppl(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu, config={}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("ppl_ratio", 1.071)
    genai.check("A1.ppl_ratio")
""")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*claim A1.ppl_ratio: measured 1.071 > max 1.035 (Paper A, A1: 12.39 vs 12.02)*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result = pytester.runpytest("--genai-claims=report")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*A1.ppl_ratio*FAIL*"])


def test_a_claim_checked_with_a_numpy_scalar_value_is_judged_on_its_number(pytester: pytest.Pytester) -> None:
    """``genai.check(id, value=np.float32(1.01))``: the metric recorded 1.01 and the verdict read FAIL ("not a
    number"); a value within the bound passes, whether or not the metric was recorded first."""
    pytest.importorskip("numpy")
    pytester.makepyfile("""
import numpy as np
import pytest

@pytest.mark.claims("A1.ppl_ratio", kinds=("cpu",))
@pytest.mark.parametrize("first", [False, True])
def test_ppl(benchmark, genai, cpu, first):
    genai.start(experiment="quant", device=cpu, config={}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=1)
    if first:
        genai.metric("ppl_ratio", 1.01)
    genai.check("A1.ppl_ratio", value=np.float32(1.01))
""")
    result = pytester.runpytest("--genai-claims=strict")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*not a number*")


def test_unknown_claim_id_and_unrecorded_metric_are_clear_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import pytest

@pytest.mark.claims("A1.ppl_ratio", kinds=("cpu",))
def test_unknown(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu)
    with pytest.raises(ValueError, match="unknown claim id 'A9.nope'"):
        genai.check("A9.nope")
    with pytest.raises(ValueError, match="has not recorded"):
        genai.check("A1.ppl_ratio")
    with pytest.raises(ValueError, match="not declared"):
        genai.check("A1.compression_ratio")
    with pytest.raises(ValueError, match="must say so in its name"):
        genai.metric("ppl_ratio", 1.0, source="modeled")
    # a unit other than the registered one would be shown and gated in the registered unit (5 ms read as 5 s)
    with pytest.raises(ValueError, match="unit 'ms' contradicts the registered unit 's'"):
        genai.metric("step_time_s", 5.0, unit="ms")
    genai.metric("step_time_s", 0.005, unit="s")
""")
    pytester.runpytest().assert_outcomes(passed=1)


def test_unknown_ids_or_kinds_in_a_claims_marker_stop_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import pytest

@pytest.mark.claims("A1.ppl_ratio", "A9.nope", kinds=("cpu",))
def test_a():
    pass
""")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_a: claims marker: unknown claim id(s) A9.nope*"])


TIMING_TEST = """
import pytest

@pytest.mark.claims("B2.cpu_dp_weak_scaling", kinds=("cpu",))
def test_t(benchmark, genai, cpu):
    genai.start(experiment="dabench_level2", device=cpu, config=dict(strategy="dp", world_size=2), model="m")
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("scaling_throughput_ratio", RATIO, rounds=ROUNDS)
    genai.check("B2.cpu_dp_weak_scaling")

@pytest.mark.claims("A1.target.quantize_vs_torchao", kinds=("cpu",))
def test_target(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu, config=dict(scale="tiny"), model="m")
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("quantize_time_ratio_vs_torchao", 3.0, rounds=[2.9, 3.0, 3.1, 3.2, 2.8])
    genai.check("A1.target.quantize_vs_torchao")
"""


@pytest.mark.parametrize(
    ("ratio", "rounds", "mode", "outcome", "verdict"),
    [
        (1.5, [1.4, 1.5, 1.6, 1.45, 1.55], "enforce", "passed", "PASS"),
        (0.6, [0.5, 0.6, 0.7, 0.55, 0.65], "enforce", "failed", "FAIL"),  # clearly on the wrong side
        (1.02, [0.8, 1.02, 1.3, 0.9, 1.2], "enforce", "passed", "INCONCLUSIVE"),  # noise: recorded, not a failure
        (1.02, [0.8, 1.02, 1.3, 0.9, 1.2], "strict", "failed", "INCONCLUSIVE"),
    ],
)
@pytest.mark.slow
def test_timing_verdicts_in_a_run(pytester: pytest.Pytester, ratio, rounds, mode, outcome, verdict) -> None:
    """The 3x-slow quantizer target fails its verdict but never the test; the physics claim follows the mode."""
    pytester.makepyfile(TIMING_TEST.replace("RATIO", repr(ratio)).replace("ROUNDS", repr(rounds)))
    result = pytester.runpytest(f"--genai-claims={mode}", "--benchmark-json=out.json")
    result.assert_outcomes(**{outcome: 1, "passed": 1} if outcome == "failed" else {"passed": 2})
    result.stdout.fnmatch_lines([f"B2.cpu_dp_weak_scaling*physics*{verdict}*", "A1.target.quantize_vs_torchao*target*FAIL*"],
                                consecutive=False)
    entry = next(c for c in json.loads((pytester.path / "out.json").read_text())["genai"]["claims"]
                 if c["id"] == "B2.cpu_dp_weak_scaling")
    assert entry["basis"] == "physics" and entry["interval"]["n"] == 5 and entry["verdict"] == verdict.lower()


CONTENDED_TEST = """
import pytest
from pytest_genai.runtime import pressure

PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total={}\\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\\n"

@pytest.fixture(autouse=True)
def psi(tmp_path, monkeypatch):  # set up before the genai fixture, which opens the window
    path = tmp_path / "cpu"
    path.write_text(PSI.format(0))
    monkeypatch.setattr(pressure, "PSI_CPU", str(path))
    return path

@pytest.mark.claims("B2.cpu_dp_weak_scaling", kinds=("cpu",))
def test_t(benchmark, genai, cpu, psi):
    genai.start(experiment="dabench_level2", device=cpu, config=dict(strategy="dp", world_size=2), model="m",
                measured_here=HERE)
    benchmark.pedantic(lambda: psi.write_text(PSI.format(STALL)), rounds=1)
    genai.metric("scaling_throughput_ratio", RATIO, rounds=ROUNDS)
    genai.check("B2.cpu_dp_weak_scaling")
"""
FAILING = {"RATIO": "0.6", "ROUNDS": "[0.5, 0.6, 0.7, 0.55, 0.65]"}
PASSING = {"RATIO": "1.5", "ROUNDS": "[1.4, 1.5, 1.6, 1.45, 1.55]"}


def _contended_test(stall_us: int, here: bool, rounds: dict[str, str]) -> str:
    text = CONTENDED_TEST.replace("STALL", str(stall_us)).replace("HERE", str(here))
    for key, value in rounds.items():
        text = text.replace(key, value)
    return text


@pytest.mark.parametrize(("stall_us", "here", "outcome", "verdict"), [
    (0, True, "failed", "fail"),
    (10**12, True, "passed", "inconclusive"),
    (10**12, False, "failed", "fail"),  # numbers read from another machine's files: this CPU's load is irrelevant
])
def test_a_timing_claim_measured_on_a_contended_cpu_is_inconclusive(pytester, stall_us, here, outcome,
                                                                     verdict) -> None:
    """The PSI stall share from the test's setup to the check is recorded (attachment cpu_contention); past 30% a
    failing timing claim reads inconclusive and says why. genai.start(measured_here=False) records none."""
    pytester.makepyfile(_contended_test(stall_us, here, FAILING))
    result = pytester.runpytest("--benchmark-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(**{outcome: 1})
    genai = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["extra_info"]["genai"]
    assert genai["claims"][0]["verdict"] == verdict
    if not here:
        assert "cpu_contention" not in genai["attachments"]
        return
    share = genai["attachments"]["cpu_contention"]["stall_share_measured"]
    assert share == (0.0 if stall_us == 0 else 1.0)
    if verdict == "inconclusive":
        assert "waited for a CPU 100% of the measurement" in genai["claims"][0]["message"]


@pytest.mark.parametrize(("stall_us", "verdict"), [(0, "pass"), (10**12, "inconclusive")])
def test_a_contended_pass_is_inconclusive_and_the_summary_and_report_say_the_stall(pytester, stall_us,
                                                                                  verdict) -> None:
    """A timing claim that would pass on a contended CPU reads inconclusive (README: a verdict measured while a task
    waited for a CPU over 30% of the time); the closing claims table, a line under it and report.md say the share."""
    pytester.makepyfile(_contended_test(stall_us, True, PASSING))
    result = pytester.runpytest("--benchmark-json=out.json", "--genai-report=report.md", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    genai = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["extra_info"]["genai"]
    assert genai["claims"][0]["verdict"] == verdict
    report = (pytester.path / "report.md").read_text()
    out = result.stdout.str()
    if verdict == "pass":
        assert "CPU contention" not in out and "CPU contention" not in report and "(CPU stall" not in report
        assert "| load    | CPU stall share idle: at most 0% (under 30%) in 1 benchmarks" in report
        return
    assert "within >= 1, but a task waited for a CPU 100% of the measurement" in genai["claims"][0]["message"]
    result.stdout.fnmatch_lines(["B2.cpu_dp_weak_scaling*INCONCLUSIVE (CPU stall 100%)*test_t*",
                                 "CPU contention: 1 of 1 benchmarks were measured while a task waited for a CPU 100% "
                                 "of the time (over 30%*): their timing verdicts read inconclusive*"])
    assert "CPU contention: 1 of 1 benchmarks" in report and "inconclusive (CPU stall 100%)" in report
    assert "| load    | CPU stall share 1 of 1 benchmarks past 30% (100%): their timing verdicts are inconclusive" in report


def test_a_native_toml_ini_value_that_is_not_a_string_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """pytest.toml's ``[pytest]`` table takes native TOML values; pytest refuses a non-string for a string ini and
    the session ended in a 37-line INTERNALERROR."""
    pytester.makefile(".toml", pytest="[pytest]\ngenai_limit = 200\n")
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest()
    # What the user gets with any pytest: a usage error naming the setting and its value, no test run, no traceback.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "genai_limit" in err and "200" in err and "INTERNALERROR" not in err and "Traceback" not in err
    assert "passed" not in result.stdout.str()
    # Who words it depends on the version: pytest 9.2 rejects the value itself, at configure, before the plugin
    # reads it (a config error of its own); before that, getini raised TypeError and the plugin named the fix.
    from packaging.version import Version

    if Version(pytest.__version__) < Version("9.2"):
        assert "ini setting genai_limit:" in err and 'genai_limit = "200"' in err


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--genai-devices", "cuda,tpu"], {}, "command-line option --genai-devices: unknown device kind(s) 'tpu'"),
        (["--genai-claims", "maybe"], {}, "command-line option --genai-claims: 'maybe' is not a claims mode"),
        ([], {"GENAI_MEMORY_BUDGET": "lots"}, "environment variable GENAI_MEMORY_BUDGET: 'lots' is not a size"),
        (["--genai-trust-remote-code", "maybe"], {},
         "command-line option --genai-trust-remote-code: 'maybe' is not a yes/no value; use yes or no"),
        # one parser per setting, at configure, naming the source actually used and the valid values (a bad value
        # found mid-run would waste the benchmarks before it)
        (["--genai-scale", "smal"], {}, "command-line option --genai-scale: 'smal' is not a scale; use one of tiny, small, full"),
        ([], {"GENAI_SCALE": "huge"}, "environment variable GENAI_SCALE: 'huge' is not a scale; use one of tiny, small"),
        (["-o", "genai_scale=Tinyy"], {}, "ini setting genai_scale: 'Tinyy' is not a scale"),
        (["--genai-model", "/abs/path/missing"], {}, "command-line option --genai-model: /abs/path/missing: no such folder"),
        ([], {"GENAI_MODEL": "not a model"}, "environment variable GENAI_MODEL: 'not a model' is neither an existing folder"),
        (["--genai-timeout", "inf"], {}, "command-line option --genai-timeout: 'inf' must be a positive, finite number"),
        ([], {"GENAI_DATA_DIR": "/no/such/data"}, "environment variable GENAI_DATA_DIR: /no/such/data: no such folder"),
        # review 2026-12-02: accepted before, then every vendor test skipped / the budget silently became the default
        (["--genai-dabench-profiles", "/no/such/runs"], {},
         "command-line option --genai-dabench-profiles: /no/such/runs: no such folder"),
        (["--genai-memory-budget", "0"], {}, "command-line option --genai-memory-budget: '0' is under one byte"),
        ([], {"GENAI_MEMORY_BUDGET": "0.1B"}, "environment variable GENAI_MEMORY_BUDGET: '0.1B' is under one byte"),
        # review 2026-12-02: found only after every test (no plots written) or in every distributed job
        (["--genai-plots", "test_bad_settings_name_their_source.py"], {}, "is a file, not a folder; give a folder for"),
        (["--genai-rdzv-endpoint", "nohost"], {}, "command-line option --genai-rdzv-endpoint: 'nohost' is not host:port"),
        ([], {"GENAI_RDZV_ENDPOINT": "node1:99999"}, "environment variable GENAI_RDZV_ENDPOINT: 'node1:99999' is not"),
        (["--genai-max-regression", "bogus=zz"], {}, "command-line option --genai-max-regression: "),
        (["--genai-max-regression", "tokens_per_s=5%"], {}, "--genai-max-regression: thresholds apply to a comparison "
                                                           "with --genai-baseline, which is not given"),
        (["--genai-store", "bad://"], {},  # found only after the whole run before ("run not stored")
         "command-line option --genai-store: bad://: not a database URL SQLAlchemy can open (NoSuchModuleError)"),
        ([], {"GENAI_STORE": "mysql://ci@db/results"},
         "environment variable GENAI_STORE: mysql://ci@db/results: its database driver is not installed"),
        # fourth reliability round: accepted, then every auto-rounds benchmark failed / an INTERNALERROR / ignored
        (["--genai-rounds", "auto", "--genai-time-budget", "9" * 400], {},
         "command-line option --genai-time-budget: '9999999999999999999999999999999999999999'... is more than a day"),
        ([], {"GENAI_MEMORY_BUDGET": "9" * 400},
         "environment variable GENAI_MEMORY_BUDGET: '9999999999999999999999999999999999999999'... is more than 1 EiB"),
        (["--genai-time-budget", "30s"], {},
         "command-line option --genai-time-budget: the time budget applies to --genai-rounds auto, which is not given"),
        ([], {"GENAI_TIME_BUDGET": "30s"}, "environment variable GENAI_TIME_BUDGET: the time budget applies to "),
        # found only at the session's end before, after every test ran
        ([], {"GENAI_STORE": "."}, "is a folder, not a database file; give a file path"),
        (["--genai-baseline", "b.json", "--genai-run-noise", "lots"], {},
         "command-line option --genai-run-noise: 'lots': 'lots' is not a standard deviation of a log"),
        (["--genai-run-noise", "0.05"], {}, "the run noise applies to a comparison with --genai-baseline"),
        # read at each benchmark's teardown before, erroring every genai test
        ([], {"GENAI_REFERENCE_ROWS": "/nonexistent/rows.json"},
         "environment variable GENAI_REFERENCE_ROWS: [Errno 2] No such file or directory: '/nonexistent/rows.json'"),
    ],
)
def test_bad_settings_name_their_source(pytester: pytest.Pytester, monkeypatch, args, env, needle) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    pytester.makepyfile("def test_a(genai):\n    pass\n")  # a genai test: environment settings apply to it
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert needle in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_plots_into_a_read_only_folder_are_refused_before_any_test(pytester: pytest.Pytester, monkeypatch) -> None:
    """`--genai-plots` into a read-only folder was found only after every test ran ("no plots written")."""
    locked = pytester.path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    real_access = os.access
    if os.geteuid() == 0:  # root may write anywhere: the folder reads as read-only as it would to a user
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) and mode & os.W_OK
                            else real_access(p, mode, **kw))
    try:
        pytester.makepyfile("def test_a():\n    pass\n")
        for target in (locked, locked / "plots"):
            result = pytester.runpytest("--genai-plots", str(target))
            assert result.ret == pytest.ExitCode.USAGE_ERROR
            assert "cannot be written (read-only)" in result.stderr.str()
    finally:
        locked.chmod(0o755)


def test_importing_the_plugin_does_not_import_torch() -> None:
    code = "import sys, pytest_genai.plugin, pytest_genai.cli; sys.exit(3 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_help_lists_the_options_and_their_percent_signs(pytester: pytest.Pytester) -> None:
    # argparse %-formats help texts: an unescaped "5%," in a help text made `pytest --help` crash
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*--genai-max-regression*", "*tokens_per_s=5%,perplexity=0.5%*"])


PATH_OPTION_CONFTEST = """
import pathlib
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.option.benchmark_json = pathlib.Path("sub/dir/out.json")  # as a pytest-benchmark storing a Path would
"""


@pytest.mark.parametrize("case", ["as-typed", "option-is-a-path"])
def test_all_skipped_run_writes_the_json_at_the_path_given(pytester: pytest.Pytester, case: str) -> None:
    # pytest-benchmark 5.2 stores an open file handle whose .name is the whole path as typed; one that stores a
    # Path must not be reduced to Path.name ("out.json" in the current folder)
    pytester.makepyfile(DEVICE_TEST)
    (pytester.path / "sub" / "dir").mkdir(parents=True)
    args = ["-m", "hpu", "-p", "no:cacheprovider"]
    if case == "option-is-a-path":
        pytester.makeconftest(PATH_OPTION_CONFTEST)
    else:
        args += ["--benchmark-json", "sub/dir/out.json"]
    result = pytester.runpytest(*args)
    assert result.ret == 0
    data = json.loads((pytester.path / "sub" / "dir" / "out.json").read_text())
    assert data["benchmarks"] == [] and "hpu" in data["machine_info"]["genai"]["absent"]
    assert not (pytester.path / "out.json").exists()


@pytest.mark.parametrize("json_arg", ["out.json", "-"])
@pytest.mark.slow
def test_all_skipped_run_does_not_say_nothing_was_saved_when_the_json_was_written(pytester: pytest.Pytester,
                                                                                  json_arg: str, monkeypatch) -> None:
    # pytest-benchmark warned "Not saving anything, no benchmarks have been run!" (terminal and warnings summary)
    # although the plugin writes the JSON of an all-skipped run. A subprocess: the warning is issued after the inner
    # session stops capturing warnings, so an in-process run would not show it; PYTHONPATH makes it load this tree's
    # plugin, wherever the package is installed from
    tree = str(Path(pytest_genai.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p))
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest_subprocess("-m", "hpu", "-p", "no:cacheprovider", "--benchmark-json", json_arg)
    assert result.ret == 0
    assert "Not saving anything" not in result.stdout.str() + result.stderr.str()
    if json_arg == "-":
        assert '"benchmarks": []' in result.stdout.str()
    else:
        assert json.loads((pytester.path / "out.json").read_text())["benchmarks"] == []
    # asked to store the run too: nothing is stored (what pytest-benchmark prints about it is its own wording)
    result = pytester.runpytest_subprocess("-m", "hpu", "-p", "no:cacheprovider", "--benchmark-json", "out.json",
                                           "--benchmark-autosave")
    assert result.ret == 0 and json.loads((pytester.path / "out.json").read_text())["benchmarks"] == []
    assert not list((pytester.path / ".benchmarks").rglob("*.json"))


@pytest.mark.parametrize("typed", [False, True])
def test_benchmark_json_in_a_missing_folder_is_a_usage_error_before_any_test(pytester: pytest.Pytester, typed) -> None:
    pytester.makepyfile("def test_a(genai):\n    raise AssertionError('must not run')\n")
    if typed:  # pytest-benchmark 5.x: argparse.FileType opens the file while parsing the command line
        result = pytester.runpytest("--benchmark-json", "missing/dir/out.json")
    else:  # a pytest-benchmark that stores the path: pytest-genai checks it in pytest_configure
        pytester.makeconftest(PATH_OPTION_CONFTEST.replace("sub/dir", "missing/dir"))
        result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "missing/dir/out.json" in result.stderr.str()
    if not typed:
        result.stderr.fnmatch_lines([f"ERROR: --benchmark-json {pytester.path}/missing/dir/out.json: the folder "
                                     f"{pytester.path}/missing/dir does not exist; create it first (mkdir -p *"])
    result.stdout.no_fnmatch_line("*must not run*")


REPORT_TEST = """
import pytest

@pytest.mark.claims("A1.ppl_ratio", kinds=("cpu",))
@pytest.mark.parametrize("mode", ["fake", "real"])
def test_ppl(benchmark, genai, cpu, mode):
    genai.start(experiment="quant", device=cpu, config={"mode": mode, "task": "wikitext"}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=2)
    genai.metric("compression_ratio", 3.5 if mode == "real" else 1.0)
    genai.metric("perplexity", 12.5 if mode == "real" else 12.1)
    genai.metric("ppl_ratio", 1.071 if mode == "real" else 1.0)
    genai.check("A1.ppl_ratio")  # the real row fails: the run has a failed test
"""


def test_genai_report_is_written_when_a_test_failed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(REPORT_TEST)
    (pytester.path / "results").mkdir()
    result = pytester.runpytest("--benchmark-json", "out.json", "--genai-report", "results/report.md",
                                "--genai-plots", "plots", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([f"genai report: {pytester.path}/results/report.md"])
    report = (pytester.path / "results" / "report.md").read_text()
    assert report.startswith("# pytest-genai report — out.json\n")  # the heading `pytest-genai report out.json` gives
    assert "2 benchmarks" in report and "experiments: quant (2)" in report and "1 fail" in report
    assert "A1.ppl_ratio" in report and "1.071" in report
    plots = sorted(p.name for p in (pytester.path / "plots").glob("*.png"))
    assert plots and all(f"](../plots/{name})" in report for name in plots)  # links relative to the report
    cli = json.loads((pytester.path / "out.json").read_text())
    assert len(cli["benchmarks"]) == 2


def test_genai_report_without_benchmark_json_and_as_html(pytester: pytest.Pytester, monkeypatch) -> None:
    pytester.makepyfile(DEVICE_TEST)
    monkeypatch.setenv("GENAI_REPORT", "report.md")
    pytester.runpytest("-m", "cpu", "-p", "no:cacheprovider").assert_outcomes(passed=1, deselected=5)
    report = (pytester.path / "report.md").read_text()
    assert report.startswith("# pytest-genai report — pytest session\n") and "A1.compression_ratio" in report
    pytester.runpytest("-m", "hpu", "--genai-report", "r.html", "-p", "no:cacheprovider").assert_outcomes(
        skipped=1, deselected=5)
    page = (pytester.path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "no benchmark ran in this session" in page and "hpu: " in page


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--benchmark-json", "out.json", "--genai-report", "out.json"],
         "--genai-report {path}/out.json: is the same path as --benchmark-json; writing the report there would "
         "overwrite it — choose another path"),
        (["--genai-baseline", "base.json", "--genai-report", "./sub/../base.json"],
         "--genai-report {path}/base.json: is the same path as --genai-baseline;"),
        (["--genai-baseline", "base.json", "--benchmark-json", "./sub/../base.json"],
         "--genai-baseline {path}/base.json: is the same file as --benchmark-json {path}/base.json; this run would "
         "overwrite its own baseline"),
        (["--genai-report", "missing/report.md"],
         "--genai-report {path}/missing/report.md: the folder {path}/missing does not exist; create it first"),
        (["--genai-store", "base.json", "--genai-report", "base.json"],
         "--genai-report {path}/base.json: is the same path as --genai-store; writing the report there would "
         "overwrite it"),
        (["--genai-store", "sqlite:///{path}/base.json", "--benchmark-json", "base.json"],
         "--benchmark-json {path}/base.json: is the --genai-store database; writing the JSON there would overwrite "
         "every stored run"),
    ],
)
def test_genai_report_over_an_input_or_in_a_missing_folder_is_a_usage_error(pytester: pytest.Pytester, args,
                                                                            needle) -> None:
    pytester.makepyfile("def test_a():\n    raise AssertionError('must not run')\n")
    (pytester.path / "base.json").write_text('{"benchmarks": []}')
    result = pytester.runpytest(*[a.format(path=pytester.path) for a in args])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and needle.format(path=pytester.path) in errors[0]
    assert (pytester.path / "base.json").read_text() == '{"benchmarks": []}'


@pytest.mark.slow
def test_sigterm_stops_the_session_as_ctrl_c_does_and_the_results_are_written(pytester: pytest.Pytester) -> None:
    """A CI timeout or a Slurm preemption sends SIGTERM: the JSON and the report keep the benchmark that ran (by
    default the process ended with neither written)."""
    import json
    import signal
    import subprocess
    import sys
    import time

    pytester.makepyfile("""
import pathlib, time

def test_a_first(benchmark, genai):
    genai.start(experiment="quant", device=None, config={}, model="tiny")
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("tokens_per_s", 5.0)

def test_b_slow():
    pathlib.Path("started").write_text("")
    time.sleep(60)
""")
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark-json", "r.json",
                             "--genai-report", "r.md"], cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (pytester.path / "started").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]
    assert [b["name"] for b in json.loads((pytester.path / "r.json").read_text())["benchmarks"]] == ["test_a_first"]
    assert (pytester.path / "r.md").read_text().startswith("# pytest-genai report")


def test_a_bad_report_path_from_the_environment_is_named_as_the_environment(pytester: pytest.Pytester,
                                                                          monkeypatch) -> None:
    """GENAI_REPORT set in a CI job's environment: the error names the variable (it named --genai-report, which the
    user never typed)."""
    monkeypatch.setenv("GENAI_REPORT", "/nonexistent/r.md")
    pytester.makepyfile("def test_a(genai):\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "environment variable GENAI_REPORT /nonexistent/r.md: the folder /nonexistent does not exist" in \
        result.stderr.str()


def test_benchmark_json_is_not_truncated_at_start_and_is_replaced_whole(pytester: pytest.Pytester) -> None:
    """argparse.FileType('wb') emptied the previous run's file when pytest parsed its options; a run killed later
    left 0 bytes. Now the file keeps the previous run until the new one replaces it, atomically (in a session that
    asks for pytest-genai at start; another project's session keeps pytest-benchmark's own option)."""
    (pytester.path / "out.json").write_text('{"previous": "run"}')
    pytester.makepyfile("""
import json

def test_a(benchmark):
    assert json.load(open("out.json")) == {"previous": "run"}
    benchmark.pedantic(lambda: None, rounds=2)
""")
    pytester.runpytest("--benchmark-json", "out.json", "--genai-scale", "tiny").assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out.json").read_text())
    assert [b["name"] for b in data["benchmarks"]] == ["test_a"]
    assert not [p.name for p in pytester.path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("outputs", [["--benchmark-json", "out.json"], ["--genai-store", "runs.sqlite"],
                                     ["--benchmark-json", "out.json", "--genai-store", "runs.sqlite"]])
def test_benchmark_disable_with_a_saved_output_is_refused_at_start(pytester: pytest.Pytester, outputs) -> None:
    """``--benchmark-disable`` runs each benchmark once, untimed, and pytest-benchmark saves none: the JSON and the
    store were written with 0 benchmarks although every test ran."""
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-disable", "--genai-claims", "enforce", *outputs)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "with --benchmark-disable" in err and "drop --benchmark-disable" in err
    assert all(flag in err for flag in outputs if flag.startswith("--")), err
    assert not (pytester.path / "out.json").exists() and not (pytester.path / "runs.sqlite").exists()


def test_benchmark_disable_still_writes_the_report_from_the_records(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-disable", "--genai-report", "r.md")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert "compression_ratio" in (pytester.path / "r.md").read_text()


XDIST_OPTION_CONFTEST = '''
def pytest_addoption(parser):
    # pytest-xdist's own option (not installed here): -n N sets --dist load on the controller
    parser.addoption("--dist", dest="dist", default="no")
'''


@pytest.mark.parametrize(("outputs", "named"), [
    (["--genai-report", "r.md"], "--genai-report"), (["--genai-plots", "plots"], "--genai-plots"),
    (["--benchmark-json", "out.json"], "--benchmark-json"), (["--genai-store", "runs.sqlite"], "--genai-store"),
])
@pytest.mark.slow
def test_xdist_with_an_output_is_refused_at_start(pytester: pytest.Pytester, outputs, named) -> None:
    """Under pytest-xdist each worker keeps its own records and pytest-benchmark disables timing: the controller wrote
    an empty JSON and a report saying no benchmark ran, and each worker its own plots into one folder."""
    pytester.makeconftest(XDIST_OPTION_CONFTEST)
    pytester.makepyfile(DEVICE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--dist", "load", *outputs)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"{named} with pytest-xdist (-n/--dist load)" in err and "drop -n" in err, err
    # one process: as before (in a subprocess: a second in-process run re-imports SQLAlchemy's compiled modules)
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dist", "no", *outputs)
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str()[-2000:]
