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
