"""pytest_genai.plugin.outputs: the path behind --benchmark-json and the configure-time output checks."""
import os
import sys
from pathlib import Path

from pytest_genai.plugin.outputs import STDOUT, benchmark_json_path, clashing_input, output_file_problem


def test_benchmark_json_path_from_every_form_pytest_benchmark_may_store(tmp_path):
    (tmp_path / "results").mkdir()
    with open(tmp_path / "results" / "hpu.json", "wb") as handle:  # argparse.FileType('wb') with an absolute path
        assert benchmark_json_path(handle, "/elsewhere") == str(tmp_path / "results" / "hpu.json")
    assert benchmark_json_path("results/hpu.json", tmp_path) == str(tmp_path / "results" / "hpu.json")
    assert benchmark_json_path(Path("results/hpu.json"), tmp_path) == str(tmp_path / "results" / "hpu.json")
    assert benchmark_json_path(sys.stdout.buffer, tmp_path) == STDOUT
    assert benchmark_json_path("-", tmp_path) == STDOUT
    assert benchmark_json_path(None, tmp_path) is None


def test_output_file_problem_names_the_folder_and_the_fix(tmp_path):
    assert output_file_problem(str(tmp_path / "out.json")) is None
    assert output_file_problem(str(tmp_path)) == "is a folder; give a file path"
    missing = tmp_path / "missing" / "dir"
    assert output_file_problem(str(missing / "out.json")) == (
        f"the folder {missing} does not exist; create it first (mkdir -p {missing}) or choose another path")
    (tmp_path / "file").write_text("")
    assert "is not a folder" in output_file_problem(str(tmp_path / "file" / "out.json"))


def test_clashing_input_follows_links(tmp_path):
    real = tmp_path / "run.json"
    real.write_text("{}")
    os.symlink(real, tmp_path / "link.json")
    inputs = [("--benchmark-json", str(real)), ("--genai-baseline", None)]
    assert clashing_input(str(tmp_path / "link.json"), inputs) == "--benchmark-json"
    assert clashing_input(str(tmp_path / "report.md"), inputs) is None
    assert clashing_input(str(tmp_path / "new" / ".." / "run.json"), inputs) == "--benchmark-json"


def test_the_benchmark_json_replaces_the_previous_file_by_one_rename(tmp_path, monkeypatch):
    """pytest-benchmark writes ``--benchmark-json`` through :class:`AtomicJsonOutput`: the previous run stays whole
    until one ``os.replace`` puts the complete new file in its place (a plain write would leave a cut file)."""
    from pytest_genai.plugin.outputs import AtomicJsonOutput

    out = tmp_path / "out.json"
    out.write_text('{"previous": "run"}')
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        renames.append((out.read_text(), Path(src).read_text(), os.fspath(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    handle = AtomicJsonOutput(str(out))
    with handle as fh:
        fh.write(b'{"new": ')
        fh.write(b'"run"}')
        assert out.read_text() == '{"previous": "run"}'  # nothing reaches the file while pytest-benchmark writes
    assert renames == [('{"previous": "run"}', '{"new": "run"}', str(out))]
    assert out.read_text() == '{"new": "run"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
