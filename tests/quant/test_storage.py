"""Save / load with safetensors (no pickle) and measured byte counts."""
import copy
import json
import struct

import pytest
import torch

from pytest_genai.quant import (PlanConfig, analyze_sensitivity, compression_report, load_quantized, make_plan,
                                model_stored_bytes, quantize_model, save_quantized, uniform_plan)
from pytest_genai.quant.storage import read_plan, tensors_stored_bytes

from .conftest import tiny_llama


def _header(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n])


@pytest.mark.parametrize("mode", ["real", "fake"])
@pytest.mark.parametrize("tiers, group", [(("bf16", "int8"), None), (("fp16", "int4"), 32),
                                          (("fp32", "bf16", "fp8_e4m3"), 64)])
def test_reload_gives_identical_outputs(tmp_path, tokens, mode, tiers, group):
    model = tiny_llama(3)
    fr = 0.25 if len(tiers) == 2 else (0.2, 0.6)
    plan = make_plan(analyze_sensitivity(model), PlanConfig(tiers=tiers, sensitive_fraction=fr, group_size=group))
    q = quantize_model(model, plan, mode)
    path = save_quantized(q, tmp_path / "q.safetensors")
    again = load_quantized(tiny_llama(99), path)  # different random weights in the skeleton
    with torch.no_grad():
        assert torch.equal(again(tokens).logits, q(tokens).logits)
    assert read_plan(path) == (plan, mode)
    assert again.genai_quant.plan == plan
    header = _header(path)
    assert json.loads(header["__metadata__"]["pytest_genai.quant_plan"]) == plan.to_dict()
    if mode == "real":
        dtypes = {v["dtype"] for k, v in header.items() if k.endswith("qweight")}
        assert dtypes <= {"BF16", "F16", "I8", "U8", "F8_E4M3", "F32"} and len(dtypes) >= 2


def test_tied_model_saved_once_and_reloaded(tmp_path, tokens):
    model = tiny_llama(4, tie=True)
    q = quantize_model(model, uniform_plan(model, "int8"), "real")
    path = save_quantized(q, tmp_path / "t.safetensors")
    again = load_quantized(tiny_llama(5, tie=True), path)
    with torch.no_grad():
        assert torch.equal(again(tokens).logits, q(tokens).logits)


def test_save_is_atomic_and_needs_a_plan(tmp_path, llama):
    with pytest.raises(ValueError, match="pass the plan"):
        save_quantized(llama, tmp_path / "x.safetensors")
    q = quantize_model(llama, uniform_plan(llama, "int8"), "real")
    save_quantized(q, tmp_path / "x.safetensors")
    assert [p.name for p in tmp_path.iterdir()] == ["x.safetensors"]  # no temp file left


def test_load_rejects_a_file_without_plan_or_for_another_model(tmp_path, llama):
    from safetensors.torch import save_file

    save_file({"a": torch.zeros(2)}, str(tmp_path / "plain.safetensors"))
    with pytest.raises(ValueError, match="no 'pytest_genai.quant_plan' metadata"):
        load_quantized(llama, tmp_path / "plain.safetensors")
    q = quantize_model(copy.deepcopy(llama), uniform_plan(llama, "int8"), "real")
    path = save_quantized(q, tmp_path / "q.safetensors")
    with pytest.raises(ValueError, match="differs from the plan"):
        load_quantized(tiny_llama(hidden=32), path)


def test_stored_bytes_count_real_storage_once():
    a = torch.zeros(10)
    assert tensors_stored_bytes([a, a, a[2:]]) == 40  # views share one storage
    model = tiny_llama(tie=True)
    assert model_stored_bytes(model) == 4 * sum(p.numel() for p in model.parameters())  # tied counted once


def test_report_against_explicit_original(llama):
    fp32 = 4 * sum(t.numel() for t in llama.state_dict().values())
    ref = copy.deepcopy(llama)
    q = quantize_model(llama, uniform_plan(llama, "int8"), "real")
    a, b, c = compression_report(None, q), compression_report(fp32, q), compression_report(ref, q)
    assert a["compression_ratio_model"] == b["compression_ratio_model"] == c["compression_ratio_model"]
    assert a["safetensors_bytes"] > a["model_stored_bytes"]  # header + metadata on top of the tensors
    assert a["compression_ratio_safetensors"] < a["compression_ratio_model"]


def test_save_is_atomic_and_leaves_the_mode_a_plain_open_would(tmp_path, monkeypatch):
    """Through pytest_genai.atomic: a new file gets 0666 & ~umask (not mkstemp's 0600), a failed save leaves the old
    file and no temporary file behind."""
    import os
    import stat

    model = tiny_llama(3)
    q = quantize_model(model, uniform_plan(model, "int8"), "real")
    old = os.umask(0o022)
    try:
        path = save_quantized(q, tmp_path / "q.safetensors")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    before = path.read_bytes()

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("safetensors.torch.save_file", disk_full)
    with pytest.raises(OSError, match="No space"):
        save_quantized(q, path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["q.safetensors"]
