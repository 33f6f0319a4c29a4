"""The H200 results README quotes its own JSON: both launches' A1 fp32 tokens/s, run1's forward times, and the
interval levels as the JSON records them."""
import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "results" / "2026-12-04-cuda-h200"


def _quant_rows(run: str) -> dict[str, dict]:
    doc = json.loads((FOLDER / run / "cuda_quant.json").read_text())
    return {b["name"]: b for b in doc["benchmarks"] if "wikitext" in b["name"]}


def test_the_readme_quotes_both_launches_fp32_throughput_and_run1s_forward_times():
    readme = (FOLDER / "README.md").read_text()
    fp32 = "test_quantized_model_quality[smollm2-135m-cuda-fp32-wikitext]"
    for run in ("run1", "run2"):
        tokens = _quant_rows(run)[fp32]["extra_info"]["genai"]["metrics"]["tokens_per_s"]
        assert f"{tokens:,.0f}" in readme, (run, tokens)
    with_energy = [b["stats"]["median"] * 1e3 for b in _quant_rows("run1").values()
                   if "energy_j" in b["extra_info"]["genai"]["metrics"]]
    assert 30 <= min(with_energy) and round(max(with_energy)) == 91
    assert "forwards of 30-91 ms" in readme and "about 20 ms" not in readme


def test_the_readme_states_each_quoted_intervals_level_as_recorded():
    readme = (FOLDER / "README.md").read_text()
    doc = json.loads((FOLDER / "run1" / "cuda.json").read_text())
    gain = next(c for b in doc["benchmarks"] for c in b["extra_info"]["genai"].get("claims", [])
                if c["id"] == "B2.batch_size_gain")
    assert gain["interval"]["level"] == 0.9375 and "93.75% interval" in readme
