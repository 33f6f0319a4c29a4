"""The prepared scripts parse, and the CUDA session script's selection and outputs are what its header says."""
import subprocess
from pathlib import Path

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
    """The quantizer run failing (exit 1) while the main benchmarks pass: the script exited 0 ("benchmarks exit
    code: 0") because only the first run's status was kept."""
    import os

    fails_quantizer = 'case "$*" in *test_quantizer.py*) exit 1;; esac; exit 0'
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path / 'bin', fails_quantizer)}:{os.environ['PATH']}",
           "OUT": str(tmp_path / "out")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "cuda_session.sh")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "exit codes: benchmarks: 0 quantizer: 1;" in done.stdout
