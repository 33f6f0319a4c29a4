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
