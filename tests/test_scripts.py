"""The prepared scripts parse, and the CUDA session script's selection and outputs are what its header says."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_cuda_session_script_parses_and_selects_by_kind():
    script = ROOT / "scripts" / "cuda_session.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text(encoding="utf-8")
    assert 'KIND=${GENAI_KIND:-cuda}' in text and '-m "$KIND and not quant"' in text
    for output in ("cuda.json", "report.md", "log.txt", "nvidia-smi.txt"):
        assert output in text, output


def _stub_bin(folder: Path, python3: str = "exit 0") -> Path:
    """Stand-ins for the tools the script calls, so it runs end to end in a moment: python3 (``python3``: its body),
    nvidia-smi and git succeed doing nothing; timeout skips its options and duration and runs its command."""
    folder.mkdir()
    timeout = 'while [ "${1#-}" != "$1" ]; do [ "$1" = -k ] && shift; shift; done; shift; exec "$@"'
    for name, body in (("python3", python3), ("nvidia-smi", "exit 0"), ("git", "exit 0"), ("timeout", timeout)):
        (folder / name).write_text(f"#!/usr/bin/env bash\n{body}\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


def test_cuda_session_script_writes_to_a_fresh_folder_and_says_where(tmp_path):
    """Without $OUT: a new mktemp -d folder per run (was a fixed /tmp/genai-cuda), named in the first and last lines;
    with $OUT: that folder, as before."""
    import os

    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path / 'bin')}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    env.pop("OUT", None)
    script = str(ROOT / "scripts" / "cuda_session.sh")
    outs = []
    for _ in range(2):
        done = subprocess.run(["bash", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        lines = done.stdout.strip().splitlines()
        assert done.returncode == 0, done.stdout + done.stderr
        assert lines[0].startswith("results go to ") and lines[-1].endswith(f"results in {lines[0][14:]}")
        outs.append(Path(lines[0][len("results go to "):]))
        assert outs[-1].parent == tmp_path and outs[-1].name.startswith("genai-cuda.") and outs[-1].is_dir()
        assert (outs[-1] / "nvidia-smi.txt").exists()
    assert outs[0] != outs[1]
    given = tmp_path / "given"
    done = subprocess.run(["bash", script], env={**env, "OUT": str(given)}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.splitlines()[0] == f"results go to {given}" and (given / "nvidia-smi.txt").exists()


def test_cuda_session_script_exits_non_zero_when_any_run_fails(tmp_path):
    """The A1 (quant) run failing while the main benchmarks pass: the script must exit with the failure, not with the
    first run's 0."""
    import os

    fails_quant = 'case "$*" in *"and quant and"*) exit 1;; esac; exit 0'
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "gguf.part-aa").write_bytes(b"GGUF")
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path / 'bin', fails_quant)}:{os.environ['PATH']}",
           "OUT": str(tmp_path / "out"), "GENAI_GGUF_PARTS": str(parts)}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "exit codes: benchmarks: 0 quant: 1;" in done.stdout


def test_cuda_session_script_runs_one_rank_per_gpu_and_no_test_file_that_has_no_cuda_row(tmp_path):
    """On a one-GPU lease every distributed row skipped (--genai-nproc 2 needs 2 GPUs), and the quantizer's file,
    whose benchmarks take the cpu fixture, collected nothing under -m cuda: exit 5 failed the script."""
    import os

    log = tmp_path / "calls"
    python3 = (f'echo "$*" >> {log}; case "$*" in *device_count*) echo 1;; esac; exit 0')
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path / 'bin', python3)}:{os.environ['PATH']}",
           "OUT": str(tmp_path / "out")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = [line for line in log.read_text().splitlines() if line.startswith("-m pytest")]
    assert runs and all("--genai-nproc 1 " in run for run in runs if "benchmarks " in run), runs
    assert not any("test_quantizer.py" in run for run in runs)


@pytest.mark.slow
def test_cuda_session_script_dry_run_on_the_cpu_selects_tests_and_passes(tmp_path):
    """The script for real, as a lease would run it, with GENAI_KIND=cpu and a small selection: it must select
    tests (a run that selects none is exit 5, a failure) and exit 0 with a readable JSON."""
    import json
    import os

    env = {**os.environ, "OUT": str(tmp_path / "out"), "GENAI_KIND": "cpu", "GENAI_INSTALL": "0",
           "GENAI_SELECT": "test_timer_overhead_cpu"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "exit codes: benchmarks: 0;" in done.stdout and "ranks per job: 2" in done.stdout
    benchmarks = json.loads((tmp_path / "out" / "cuda.json").read_text())["benchmarks"]
    assert [b["name"] for b in benchmarks] == ["test_timer_overhead_cpu"]
    assert "1 passed" in (tmp_path / "out" / "log.txt").read_text()
    assert (tmp_path / "out" / "report.md").exists()


@pytest.mark.slow
def test_the_paper_plan_dry_run_on_the_cpu_collects_every_run_and_passes(tmp_path):
    """GENAI_PLAN=paper GENAI_DRY=1 on the CPU: each of the plan's three runs collects its selection (a run that
    collects nothing exits 5 and fails the script), measures nothing, and the script exits 0."""
    import os

    env = {**os.environ, "OUT": str(tmp_path / "out"), "GENAI_KIND": "cpu", "GENAI_INSTALL": "0",
           "GENAI_PLAN": "paper", "GENAI_DRY": "1"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "exit codes: finetune: 0 a1: 0 level1: 0;" in done.stdout
    logs = {name: (tmp_path / "out" / f"log_paper_{name}.txt").read_text() for name in ("finetune", "a1", "level1")}
    assert "test_finetune_throughput[llama-3.1-8b-random-ddp-attn_unfused-amp-mb1-s2048-lora_r8" in logs["finetune"]
    assert "1/" in logs["finetune"] and "3/" in logs["a1"]  # one LoRA row; fp32, fake and real
    for mode in ("fp32", "fake", "real"):
        assert f"test_random_arch_throughput[cpu-{mode}]" in logs["a1"]
    assert "test_level1_cpu[L8-" in logs["level1"] and "-forward]" in logs["level1"]


def test_the_paper_plan_sizes_its_runs_for_one_80_gb_gpu():
    """What the plan runs at paper scale: the 8B LoRA row, the 1.1B architecture at a batch of 8, Level 1 at full."""
    import importlib.util

    text = (ROOT / "scripts" / "cuda_session.sh").read_text(encoding="utf-8")
    assert '-k "test_finetune_throughput and llama-3.1-8b-random-ddp-attn_unfused" --genai-scale full' in text
    assert "--genai-finetune-methods lora" in text and "-k test_random_arch_throughput --genai-scale full" in text
    spec = importlib.util.spec_from_file_location("quant_bench", ROOT / "benchmarks" / "test_quantization.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    layers, vocab, seq = bench.RANDOM_ARCH_SHAPES["full"]
    assert (layers, vocab) == (22, 32000) and bench.RANDOM_ARCH_BATCH >= 8 and seq >= 1024


def test_ci_installs_from_the_lock_and_the_lock_scripts_parse():
    """.ci/run installs torch and `.[ci]` with -c ci/constraints.txt; the refresh and newest-versions scripts parse,
    and the latter keeps torch pinned while it upgrades the rest (eager upgrades would pull the newest CUDA build)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'LOCK=ci/constraints.txt' in ci and 'pip install -q -c "$LOCK" torch' in ci
    assert 'pip install -q -c "$LOCK" -e ".[ci]"' in ci and (ROOT / "ci" / "constraints.txt").is_file()
    for name in ("lock_ci.sh", "newest_versions.sh"):
        assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / name)]).returncode == 0, name
    newest = (ROOT / "scripts" / "newest_versions.sh").read_text(encoding="utf-8")
    assert '-c "$VENV/torch-pin.txt" --upgrade --upgrade-strategy eager -e ".[ci]"' in newest
    assert 'exec python3 -m pytest "$@"' in newest
    assert "python3 -m pytest tests benchmarks || status=$?" in newest
    assert "python3 -m pytest tests benchmarks -m slow || status=$?" in newest


def test_gate_selfcheck_table_of_saved_cases_names_each_missed_target(tmp_path):
    """``--table`` measures nothing: it prints the saved cases' table and exits 1 naming each missed target."""
    import json

    cases = [{"slowdown": s, "loaded": "idle", "verdict": v, "seconds": 1.0, "stall_base": 0.0, "stall_cur": 0.0,
              "rounds_current": 10, "rounds_baseline": 10}
             for s, v in ((0.0, "regressed"), (0.3, "regressed"), (0.15, "unchanged"))]
    saved = tmp_path / "cases.json"
    saved.write_text(json.dumps(cases), encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gate_selfcheck.py"), "--table", str(saved)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "| 30% | idle | 1 | 1 | 0 | 0 | 0 | 1.00 | 10-10 / 10-10 | 0.00-0.00 |" in done.stdout
    assert "target missed: 1 false alarm(s), idle" in done.stderr
    assert "target missed: 15% slowdown read unchanged 1 time(s), idle" in done.stderr
    cases[0]["verdict"], cases[2]["verdict"] = "unchanged", "regressed"
    saved.write_text(json.dumps(cases), encoding="utf-8")
    met = subprocess.run([sys.executable, str(ROOT / "scripts" / "gate_selfcheck.py"), "--table", str(saved)],
                         capture_output=True, text=True, timeout=120)
    assert met.returncode == 0 and "target missed" not in met.stderr


def test_gate_selfcheck_reference_run_files_are_gated_on_the_normalized_row_as_the_gate_reads_them():
    """The self-check's run files with ``--statistic reference`` carry the normalized rounds and the reference label:
    through the real gate, a quiet current side 1.3x slower in raw time but not over the reference is not a
    regression (inconclusive), and one 1.3x slower over the reference too is regressed."""
    import importlib.util

    from pytest_genai.claims import load_metrics
    from pytest_genai.report.gate import gate_runs
    from pytest_genai.results.registry import metric_info_from
    from pytest_genai.results.runs import run_from_json
    from pytest_genai.report.thresholds import parse_thresholds

    spec = importlib.util.spec_from_file_location("gate_selfcheck", ROOT / "scripts" / "gate_selfcheck.py")
    selfcheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(selfcheck)
    info = metric_info_from(load_metrics())
    limits = parse_thresholds("step_time_s=10%,step_time_per_reference=10%")
    base = [1e-3 * (1 + 0.01 * (i % 3)) for i in range(10)]
    ratios = [2.0 * (1 + 0.01 * (i % 3)) for i in range(10)]
    def verdict(cur_ratio: float) -> dict:
        doc = selfcheck.run_doc([x * 1.3 for x in base], None, "cur", [r * cur_ratio for r in ratios])
        result = gate_runs(run_from_json(selfcheck.run_doc(base, None, "base", ratios), "base"),
                           run_from_json(doc, "cur"), info, limits)
        return {m.metric: m.status for m in result.comparison.pairs[0].metrics}

    assert verdict(1.0) == {"step_time_s": "inconclusive", "step_time_per_reference": "unchanged"}
    assert verdict(1.3) == {"step_time_s": "regressed", "step_time_per_reference": "regressed"}


def test_cuda_session_script_says_when_the_budget_leaves_no_time_for_a1(tmp_path):
    """The device tool stops a command at 10 minutes: with under a minute of GENAI_BUDGET_S left after the main run,
    A1 is not started (it would be killed with its results unwritten); the script says so and exits non-zero."""
    import os

    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "gguf.part-aa").write_bytes(b"GGUF")
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path / 'bin')}:{os.environ['PATH']}", "OUT": str(tmp_path / "out"),
           "GENAI_GGUF_PARTS": str(parts), "GENAI_BUDGET_S": "40"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "A1 not run:" in done.stdout and "exit codes: benchmarks: 0 quant: 1;" in done.stdout


def test_the_gaudi_leg_runs_last_in_ci_from_its_lock_and_its_stand_in_never_ships():
    """.ci/run ends with the Gaudi-stack leg (after the test command and the slow set, in the exit status); the leg
    installs from ci/constraints-gaudi.txt beside the base environment's pinned torch, as the README's Gaudi line
    does; the stand-in bridge under tests/ is outside pyproject's package discovery."""
    import tomllib

    from setuptools import find_packages

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    leg_at = ci.index("bash scripts/gaudi_leg.sh || status=$?")
    assert leg_at > ci.index("python3 -m pytest tests benchmarks -m slow || status=$?") and ci[-1] == 'exit "$status"'
    leg = (ROOT / "scripts" / "gaudi_leg.sh").read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gaudi_leg.sh")]).returncode == 0
    assert "-m venv --system-site-packages" in leg and "grep -E '^torch==' ci/constraints.txt" in leg
    assert '-c ci/constraints-gaudi.txt -c "$venv/torch-pin.txt"' in leg and 'tests/gaudi_standin' in leg
    assert 'pip install -c ci/constraints-gaudi.txt -e ".[hpu]"' in (ROOT / "README.md").read_text(encoding="utf-8")
    pins = dict(line.split("==") for line in (ROOT / "ci" / "constraints-gaudi.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert "torch" not in pins  # a Gaudi node's torch is Habana's build
    assert pins["optimum-habana"].startswith("1.21.") and pins["transformers"].startswith("4.55.")
    assert pins["huggingface-hub"].startswith("0.") and pins["accelerate"] == "1.10.1"
    assert {"neural-compressor-pt", "peft", "deepspeed"} <= set(pins)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["pytest_genai*"]
    shipped = find_packages(str(ROOT), include=include)
    assert shipped and not [p for p in shipped if "habana" in p or p.startswith("tests")]
    assert (ROOT / "tests" / "gaudi_standin" / "habana_frameworks" / "__init__.py").is_file()


def test_every_mutation_still_targets_code_that_exists_once():
    # The mutation check breaks code by literal replacement; code that moved makes its mutation a silent no-op.
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mutation_check
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for mutation in mutation_check.MUTATIONS:
        text = (ROOT / mutation.file).read_text(encoding="utf-8")
        assert text.count(mutation.old) == 1, f"{mutation.name}: its code is not in {mutation.file} exactly once"
        assert all((ROOT / t).exists() for t in mutation.tests), mutation.name
