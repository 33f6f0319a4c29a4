"""``from_pretrained``'s dtype keyword on old and new transformers: 4.55 (optimum-habana 1.21's pin) takes
``torch_dtype`` and passes an unknown ``dtype`` on to the model's ``__init__``; 4.56+ take ``dtype``."""
import importlib.metadata

import pytest

from pytest_genai.model_folder import dtype_keyword, dtype_kwargs


@pytest.mark.parametrize("version, keyword", [("4.55.4", "torch_dtype"), ("4.45.0", "torch_dtype"),
                                              ("4.56.0", "dtype"), ("4.57.1", "dtype"), ("5.0.0rc1", "dtype"),
                                              ("5.24.0", "dtype")])
def test_dtype_keyword_by_version(version, keyword):
    assert dtype_keyword(version) == keyword
    assert dtype_kwargs("fp", version) == {keyword: "fp"}


class _Called(Exception):
    pass


def _fake_transformers(monkeypatch, version):
    """transformers reporting ``version``, whose ``from_pretrained`` records its keywords and stops the caller."""
    transformers = pytest.importorskip("transformers")
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: version if name == "transformers" else real(name))
    seen = {}

    def from_pretrained(*args, **kwargs):
        seen.update(kwargs)
        if "dtype" in kwargs and version.startswith("4.55"):  # what 4.55 does with it, in short
            raise TypeError("LlamaForCausalLM.__init__() got an unexpected keyword argument 'dtype'")
        raise _Called

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    return seen


@pytest.mark.parametrize("version, keyword", [("4.55.4", "torch_dtype"), ("4.57.1", "dtype")])
def test_load_model_passes_the_installed_keyword(monkeypatch, tmp_path, version, keyword):
    pytest.importorskip("torch")
    from pytest_genai.evals.models import ModelRef, load_model

    seen = _fake_transformers(monkeypatch, version)
    with pytest.raises(_Called):
        load_model(ModelRef("m", "folder", str(tmp_path)))
    assert keyword in seen and ({"dtype", "torch_dtype"} - {keyword}).isdisjoint(seen)


@pytest.mark.parametrize("version, keyword", [("4.55.4", "torch_dtype"), ("4.57.1", "dtype")])
def test_gguf_conversion_passes_the_installed_keyword(monkeypatch, tmp_path, version, keyword):
    pytest.importorskip("torch")
    import transformers

    from pytest_genai.evals import models

    seen = _fake_transformers(monkeypatch, version)
    monkeypatch.setattr(models, "_installed", lambda module: True)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: None)
    with pytest.raises(_Called):
        models._convert_gguf(tmp_path / "m.gguf")
    assert keyword in seen and ({"dtype", "torch_dtype"} - {keyword}).isdisjoint(seen)


@pytest.mark.parametrize("version, keyword", [("4.55.4", "torch_dtype"), ("4.57.1", "dtype")])
def test_wikitext_worker_passes_the_installed_keyword(monkeypatch, tmp_path, version, keyword):
    pytest.importorskip("torch")
    import transformers

    from pytest_genai.train import worker
    from pytest_genai.train.config import WikitextConfig

    seen = _fake_transformers(monkeypatch, version)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: None)
    cfg = WikitextConfig(model_path=str(tmp_path), text_path=str(tmp_path / "t.raw"))
    with pytest.raises(_Called):
        worker.run_wikitext(cfg, "cpu", {"local_rank": 0, "world_size": 1, "local_world_size": 1, "rank": 0})
    assert keyword in seen and ({"dtype", "torch_dtype"} - {keyword}).isdisjoint(seen)
