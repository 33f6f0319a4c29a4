"""The A1 benchmarks end to end in miniature: the real benchmark files, run by pytester on a tiny config-built model
saved to a folder (``--genai-model``) and a few records in the shared-data layout (``--genai-data-dir``)."""
import json
import shutil
from pathlib import Path

import pytest

from .conftest import byte_tokenizer, tiny_llama

pytestmark = pytest.mark.slow  # seconds a test (worker processes, timed loops, real models): .ci/run runs them with -m slow

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
WIKI = (" = First Page = \n The first page has a few lines of text , with @-@ tokens . \n = = Part = = \n"
        " More words follow here , and then some more ( as usual ) . \n = Second Page = \n"
        " The second page is short but long enough to fill a small throughput batch of byte tokens . \n") * 2
HS = [{"idx": i, "activity_label": "Cooking", "ctx": f"A man cuts onion {i}. he", "label": i % 4,
       "endings": ["fries them.", "sings.", "cries a lot.", "leaves the kitchen."]} for i in range(3)]
BQ = [{"question": f"is it true {i}", "passage": f"Title -- Passage number {i}.", "idx": i,
       "label": "true" if i % 2 else "false"} for i in range(3)]


@pytest.fixture
def setup(tmp_path):
    model_dir = tmp_path / "tiny-llama"
    tiny_llama().save_pretrained(model_dir, safe_serialization=True)
    byte_tokenizer().save_pretrained(model_dir)
    data = tmp_path / "data"
    (data / "wikitext-2-raw-v1").mkdir(parents=True)
    (data / "wikitext-2-raw-v1" / "test.raw").write_bytes(WIKI.replace("\n", "\r\n").encode())
    for folder, rows in (("hellaswag", HS), ("boolq", BQ)):
        (data / folder).mkdir()
        (data / folder / "validation.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return model_dir, data


def test_quantization_and_lm_eval_benchmarks_run_and_record_the_contract(setup, pytester):
    # `setup` before `pytester`: pytester snapshots sys.modules when it starts and restores it at teardown, and the
    # transformers/torch modules that building and saving the model imports cannot be imported a second time.
    pytest.importorskip("pytest_benchmark")
    model_dir, data = setup
    bench = pytester.mkdir("benchmarks")  # a benchmarks/ folder: genai.start() takes the experiment from the file's row
    for name in ("conftest.py", "test_quantization.py", "test_eval_vs_lmeval.py"):
        shutil.copy(BENCHMARKS / name, bench / name)
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "quant and cpu", "--genai-devices", "cpu", "--genai-model", str(model_dir),
        "--genai-data-dir", str(data), "--genai-claims", "report", "--benchmark-json", str(out),
        "benchmarks/test_quantization.py", "benchmarks/test_eval_vs_lmeval.py")
    import importlib.util

    has_lm_eval = importlib.util.find_spec("lm_eval") is not None
    # 7 paper-plan rows (fake mode's HellaSwag/BoolQ skip at tiny) + 4 extra methods' WikiText rows (their 8
    # HellaSwag/BoolQ rows skip at tiny) + 3 lm-eval rows + 3 TinyLlama-architecture throughput rows (random weights)
    # + 2 device-kernel rows (int8, fp8 against fp32)
    result.assert_outcomes(passed=19 if has_lm_eval else 16, skipped=10 if has_lm_eval else 13)
    rows = {b["name"]: b["extra_info"]["genai"] for b in json.loads(out.read_text())["benchmarks"]}
    for fmt in ("int8", "fp8_e4m3"):  # which kernel ran is config: the row names it, and the speedup is paired
        kernel_row = rows[f"test_kernel_throughput[cpu-{fmt}]"]
        assert kernel_row["config"]["precision"] == fmt and kernel_row["config"]["kernel"], kernel_row["config"]
        assert kernel_row["config"]["layers"] == 1 and kernel_row["labels"]["kernel_layers"].endswith(": 7")
        assert len(kernel_row["metric_rounds"]["kernel_speedup_vs_fp32"]) >= 5
    real = rows["test_quantized_model_quality[tiny-llama-cpu-real-wikitext]"]
    assert real["experiment"] == "quant" and real["model"] == "tiny-llama"
    assert real["config"]["mode"] == "real" and real["config"]["precision"] == "bf16/int8"
    for metric in ("perplexity", "word_perplexity", "bits_per_byte", "compression_ratio", "mean_bits_per_weight",
                   "tokens_per_s", "ppl_ratio", "model_bytes"):
        assert metric in real["metrics"], metric
    assert real["metric_sources"]["compression_ratio"] == "measured"
    assert real["metric_sources"]["predicted_compression_ratio"] == "modeled"
    from pytest_genai.claims import load_metrics
    from pytest_genai.plugin.recorder import run_source_problems

    registry = load_metrics()
    assert {name: run_source_problems(g, registry) for name, g in rows.items() if run_source_problems(g, registry)} == {}
    assert {c["id"] for c in real["claims"]} >= {"A1.compression_ratio", "A1.ppl_ratio"}
    assert "plan" in real["attachments"]
    hellaswag_real = rows["test_quantized_model_quality[tiny-llama-cpu-real-hellaswag]"]
    assert {"acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "acc_drop", "acc_drop_lcb95"} <= set(
        hellaswag_real["metrics"])
    # the drop claim is judged on McNemar's exact test of the flipped answers, named in the interval and the verdict
    assert hellaswag_real["metric_intervals"]["acc_drop"]["method"].startswith("McNemar exact, discordant ")
    (drop_verdict,) = [c for c in hellaswag_real["claims"] if c["id"] == "A1.hellaswag_acc_drop"]
    assert "McNemar exact" in drop_verdict["message"] and drop_verdict["verdict"] == "inconclusive"  # 3 examples
    assert "test_quantized_model_quality[tiny-llama-cpu-fake-hellaswag]" not in rows  # tiny: fp32 and real only
    fake = rows["test_quantized_model_quality[tiny-llama-cpu-fake-wikitext]"]
    assert "compression_ratio" not in fake["metrics"]  # nothing is stored in low precision in fake mode
    fp32 = rows["test_quantized_model_quality[tiny-llama-cpu-fp32-boolq]"]
    assert fp32["claims"] == [] and fp32["metrics"]["n_examples"] == 3
    if has_lm_eval:
        compare = rows["test_wikitext_word_perplexity_and_speed_vs_lm_eval[tiny-llama-cpu]"]
        assert compare["metrics"]["word_ppl_rel_diff"] <= 1e-3
        assert compare["metric_sources"]["modeled_speedup_ceiling_vs_lmeval"] == "modeled"
        assert 0 < compare["metrics"]["matmul_time_share"] < 1
        boolq = rows["test_multiple_choice_accuracy_and_speed_vs_lm_eval[tiny-llama-cpu-boolq]"]
        assert boolq["metrics"]["acc"] == boolq["metrics"]["lmeval_acc"]
        assert boolq["metrics"]["acc_stderr"] > 0 and boolq["metric_sources"]["acc_stderr"] == "measured"
        hellaswag = rows["test_multiple_choice_accuracy_and_speed_vs_lm_eval[tiny-llama-cpu-hellaswag]"]
        assert {"acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "lmeval_acc", "lmeval_acc_norm"} <= set(
            hellaswag["metrics"])
        assert "acc_norm" not in boolq["metrics"]
