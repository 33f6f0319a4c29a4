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
    with pytest.raises(VendorUnavailable, match="no ipu profile"):
        read_profile(tmp_path, "ipu", CFG)


def test_ipu_without_poptorch_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "poptorch", None)
    with pytest.raises(VendorUnavailable, match="Poplar SDK"):
        run_on_ipu(CFG, tmp_path)
