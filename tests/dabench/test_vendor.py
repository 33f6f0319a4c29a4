import sys

import pytest

from pytest_genai.dabench.config import DecoderConfig
from pytest_genai.dabench.vendor import VendorUnavailable, profile_path, read_profile, run_on_ipu

from .test_readers import COMPILE_REPORT, _section_csv

CFG = DecoderConfig(layers=2, hidden=768, heads=12, seq_len=1024, batch=8, dtype="fp16", mode="train")


def test_profile_layout():
    assert profile_path("/p", "wse", CFG).as_posix() == f"/p/wse/{CFG.id}/compile_report.txt"
    with pytest.raises(ValueError, match="dataflow profile"):
        profile_path("/p", "cuda", CFG)


def test_read_profile_dispatches_by_kind(tmp_path):
    for kind, text in (("wse", COMPILE_REPORT), ("rdu", _section_csv())):
        path = profile_path(tmp_path, kind, CFG)
        path.parent.mkdir(parents=True)
        path.write_text(text)
    assert read_profile(tmp_path, "wse", CFG).vendor == "cerebras"
    assert read_profile(tmp_path, "rdu", CFG).vendor == "sambanova"
    with pytest.raises(VendorUnavailable, match="no ipu profile .*autoReport.outputGraphProfile=true"):
        read_profile(tmp_path, "ipu", CFG)  # the skip says how to produce the file


def test_ipu_execution_profile_has_its_own_folder_and_its_absence_says_how_to_make_it(tmp_path):
    from pytest_genai.dabench.vendor import execution_profile_path, read_execution_profile

    assert execution_profile_path("/p", CFG).as_posix() == f"/p/ipu/{CFG.id}/execution/profile.pop"
    with pytest.raises(VendorUnavailable, match=rf"no IPU execution profile for {CFG.id} at .*execution/profile.pop: "
                                                r"profile the config in a separate, untimed run .*"
                                                r"autoReport.outputExecutionProfile"):
        read_execution_profile(tmp_path, CFG)


def test_ipu_without_poptorch_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "poptorch", None)
    with pytest.raises(VendorUnavailable, match="Poplar SDK"):
        run_on_ipu(CFG, tmp_path)


def test_timed_ipu_runs_write_the_graph_profile_only(tmp_path):
    from pytest_genai.dabench.vendor import ipu_engine_options

    timed = ipu_engine_options(tmp_path)
    assert timed["autoReport.outputGraphProfile"] == "true" and "autoReport.all" not in timed
    assert "autoReport.outputExecutionProfile" not in timed
    assert ipu_engine_options(tmp_path, execution_profile=True)["autoReport.outputExecutionProfile"] == "true"


def test_ipu_out_of_memory_is_a_capacity_result(tmp_path, monkeypatch):
    """Poplar's out-of-memory error at compile time comes back as a failed VendorRun (the paper's 'fails at 10
    layers'), not as an exception; other errors still raise."""
    import types

    class FakeRunner:
        def __init__(self, message):
            self.message = message

        def compile(self, x):
            raise RuntimeError(self.message)

    def fake_poptorch(message):
        mod = types.SimpleNamespace(Options=lambda: None, identity_loss=lambda x, reduction: x,
                                    inferenceModel=lambda m, o: FakeRunner(message),
                                    trainingModel=lambda m, o, optimizer: FakeRunner(message),
                                    optim=types.SimpleNamespace(AdamW=lambda params, lr: None))
        monkeypatch.setitem(sys.modules, "poptorch", mod)

    small = DecoderConfig(layers=1, hidden=64, heads=1, seq_len=16, batch=1, dtype="fp32", mode="train")
    fake_poptorch("Out of memory: Cannot fit all variable data onto one or more tiles")
    run = run_on_ipu(small, tmp_path)
    assert run.step_s is None and run.failure.startswith("out_of_memory: RuntimeError: Out of memory")
    fake_poptorch("poplar graph construction error: bad vertex")
    with pytest.raises(RuntimeError, match="bad vertex"):
        run_on_ipu(small, tmp_path)


@pytest.mark.parametrize("kind", ["wse", "rdu"])
@pytest.mark.parametrize("encoding", ["utf-16", "binary"])
def test_a_utf16_or_binary_vendor_file_is_a_layout_error_naming_it(tmp_path, kind, encoding):
    """A UTF-16 or binary report raised a UnicodeDecodeError that named no file."""
    from pytest_genai.dabench.readers import LayoutError

    path = profile_path(tmp_path, kind, CFG)
    path.parent.mkdir(parents=True)
    text = COMPILE_REPORT if kind == "wse" else _section_csv()
    path.write_bytes(text.encode("utf-16") if encoding == "utf-16" else b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(LayoutError, match=f"{path}: expected a UTF-8 text file"):
        read_profile(tmp_path, kind, CFG)


@pytest.mark.parametrize("kind", ["wse", "rdu"])
def test_a_utf8_bom_vendor_file_reads_as_without_it(tmp_path, kind):
    """A BOM before the header read as "not a Cerebras compile report?"."""
    path = profile_path(tmp_path, kind, CFG)
    path.parent.mkdir(parents=True)
    text = COMPILE_REPORT if kind == "wse" else _section_csv()
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    plain = tmp_path / "plain"
    (plain / kind / CFG.id).mkdir(parents=True)
    profile_path(plain, kind, CFG).write_text(text)
    assert read_profile(tmp_path, kind, CFG) == read_profile(plain, kind, CFG)


def test_a_link_out_of_the_profiles_folder_is_not_followed(tmp_path):
    """A symlink inside --genai-dabench-profiles DIR that led outside it was read, and its first line quoted."""
    from pytest_genai.dabench.readers import LayoutError

    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOKEN=hunter2\n")
    root = tmp_path / "profiles"
    path = profile_path(root, "wse", CFG)
    path.parent.mkdir(parents=True)
    path.symlink_to(secret)
    with pytest.raises(LayoutError, match="links outside that folder") as info:
        read_profile(root, "wse", CFG)
    assert "hunter2" not in str(info.value)
    inside = root / "wse" / "real.txt"
    inside.write_text(COMPILE_REPORT)
    path.unlink()
    path.symlink_to(inside)  # a link that stays inside the folder is read
    assert read_profile(root, "wse", CFG).vendor == "cerebras"
