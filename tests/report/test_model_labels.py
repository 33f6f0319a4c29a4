"""A row that ran random weights says so with its scale, and LoRA settings read as a short label, in tables and plots
alike (display only: the recorded model name stays the matching key)."""
from pytest_genai.report import plots
from pytest_genai.results.runs import config_value_label, model_label, run_from_json
from pytest_genai.report.views import display_config

from .runfiles import bench, run_doc

LORA = {"rank": 16, "alpha": 32, "dropout": 0.05, "targets": ["q_proj", "v_proj"]}


def test_random_weights_and_scale_are_in_the_model_label():
    assert model_label("llama-3.1-8b", {"weights": "random", "scale": "tiny"}) == "llama-3.1-8b (tiny random)"
    assert model_label("llama-3.1-8b", {"weights": "random", "scale": "full"}) == "llama-3.1-8b (full-size random)"
    assert model_label("tinyllama-1.1b", {"weights": "random"}) == "tinyllama-1.1b (random)"
    assert model_label("smollm2-135m", {"scale": "tiny"}) == "smollm2-135m" and model_label(None, {}) == "—"


def test_lora_settings_read_as_a_short_label():
    assert config_value_label("lora", LORA) == "lora r16" and config_value_label("lora", None) == "full"
    assert config_value_label("strategy", None) is None


def _finetune_records():
    rows = [bench(f"test_ft[{i}]", "finetune", {"model": "gemma-2-27b", "scale": "tiny", "weights": "random",
                                                "strategy": s, "lora": lora}, {"tokens_per_s": 100.0 + i},
                  model="gemma-2-27b")
            for i, (s, lora) in enumerate((("ddp", None), ("fsdp", None), ("ddp", LORA), ("fsdp", LORA)))]
    return run_from_json(run_doc(rows), "run.json").records


def test_tables_and_plot_legends_show_the_labels_not_the_raw_values():
    recs = _finetune_records()
    shown = display_config(recs[2])
    assert shown["model"] == "gemma-2-27b (tiny random)" and shown["lora"] == "lora r16"
    assert recs[0].model_label == "gemma-2-27b (tiny random)" and recs[0].model == "gemma-2-27b"
    legend = {plots._label(r, ["lora", "model"]) for r in recs}
    assert legend == {"full gemma-2-27b (tiny random)", "lora r16 gemma-2-27b (tiny random)"}
