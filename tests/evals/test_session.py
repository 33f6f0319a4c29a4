import pytest

from pytest_genai.devices.device import Device
from pytest_genai.evals import models, runner
from pytest_genai.evals.config import EvalBudget, EvalSettings
from pytest_genai.evals.session import EvalSession

from .conftest import byte_tokenizer, tiny_llama


@pytest.fixture
def folder_ref(tmp_path):
    tiny_llama().save_pretrained(tmp_path, safe_serialization=True)
    byte_tokenizer().save_pretrained(tmp_path)
    return models.ModelRef("tiny", "folder", str(tmp_path))


def test_the_fp32_baseline_is_evaluated_once_per_device_model_and_task(folder_ref, shared_data_dir, monkeypatch):
    calls = []
    real_run = runner.run_task

    def counting(*args, **kwargs):
        calls.append(args[1].task)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(runner, "run_task", counting)
    session = EvalSession(EvalBudget(wikitext_tokens=64, hellaswag=2, boolq=2),
                          EvalSettings(max_length=1024, context=64, stride=64, batch_size=2), shared_data_dir)
    cpu = Device("cpu", 0, "cpu", "cpu")
    first = session.baseline(cpu, folder_ref, "boolq")
    assert session.baseline(cpu, folder_ref, "boolq") is first
    session.baseline(cpu, folder_ref, "wikitext")
    assert calls == ["boolq", "wikitext"]
    assert session.fp32_model(cpu, folder_ref) is session.fp32_model(cpu, folder_ref)  # loaded once


def test_fresh_models_are_independent_copies(folder_ref, shared_data_dir):
    import torch

    session = EvalSession(EvalBudget(), EvalSettings(), shared_data_dir)
    cpu = Device("cpu", 0, "cpu", "cpu")
    copy = session.fresh_model(cpu, folder_ref)
    with torch.no_grad():
        copy.model.embed_tokens.weight.zero_()
    assert session.fp32_model(cpu, folder_ref).loaded.model.model.embed_tokens.weight.abs().sum() > 0


def test_throughput_batch_comes_from_wikitext_tokens(folder_ref, shared_data_dir):
    session = EvalSession(EvalBudget(), EvalSettings(), shared_data_dir)
    tok = byte_tokenizer()
    ids = session.throughput_ids(folder_ref, tok, 2, 50)
    assert tuple(ids.shape) == (2, 50)
    assert tok.decode(ids[0].tolist()).startswith(" = Robert Boulter = ")
