"""pytest_genai.atomic: atomic writes leave the mode a plain open() would."""
import os
import stat

from pytest_genai.atomic import write_json_atomic, write_text_atomic


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_file_gets_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "sub" / "report.md", "# report\n")
    finally:
        os.umask(old)
    assert path.read_text() == "# report\n"
    assert _mode(path) == 0o644
    assert not list(path.parent.glob(".*tmp"))


def test_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("{}")
    os.chmod(path, 0o640)
    write_json_atomic(path, {"benchmarks": []})
    assert _mode(path) == 0o640
    assert '"benchmarks": []' in path.read_text()


def test_the_target_is_replaced_by_rename_never_rewritten_in_place(tmp_path, monkeypatch):
    """A reader (or a crash) mid-write sees the old file or the new one, never a truncated one: the new content
    arrives as a new inode renamed over the target, and a failed write leaves the old file as it was."""
    import pytest

    path = tmp_path / "out.json"
    path.write_text('{"old": 1}')
    before = os.stat(path).st_ino
    held = open(path)  # a reader that opened the old file keeps reading the old content
    write_json_atomic(path, {"new": 2})
    assert os.stat(path).st_ino != before
    assert held.read() == '{"old": 1}'
    held.close()

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pytest_genai.atomic.os.fsync", disk_full)  # the write fails before the rename
    with pytest.raises(OSError, match="No space"):
        write_json_atomic(path, {"newer": 3})
    assert '"new": 2' in path.read_text() and not list(tmp_path.glob(".*tmp"))


def test_atomic_path_for_writers_that_take_a_file_name(tmp_path):
    import pytest

    from pytest_genai.atomic import atomic_path

    target = tmp_path / "model.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("writer failed")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]


def test_a_symlinked_target_is_written_through_and_stays_a_link(tmp_path):
    """``--benchmark-json link.json`` with link.json -> results/target.json: the target gets the run, the link
    stays a link (it became a regular file and the target kept the stale run)."""
    import os

    from pytest_genai.atomic import write_text_atomic

    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    os.symlink(target, link)
    write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new" and link.read_text() == "new"
    assert not [p for p in (tmp_path / "results").iterdir() if p.name.startswith(".")]
