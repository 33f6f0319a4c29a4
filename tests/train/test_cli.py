"""`pytest-genai plan`."""
import json

from pytest_genai.train.cli import main


def test_plan_llama_on_8_gaudi2(capsys):
    assert main(["--model", "llama-3.1-8b", "--device", "gaudi2", "--world", "8"]) == 0
    out = capsys.readouterr().out
    assert "llama-3.1-8b: 8.03 B parameters" in out and "96 GB" in out
    assert "recommended: zero2" in out and "DDP needs 133.9 GiB" in out
    for strategy in ("ddp", "zero2", "fsdp", "zero3"):
        assert f"  {strategy} " in out


def test_plan_json_recommends_ddp_when_it_fits(capsys):
    assert main(["--model", "llama-3.1-8b", "--scale", "tiny", "--capacity-gib", "1", "--world", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recommended"] == "ddp" and data["fits"]["ddp"] and data["source"] == "modeled"
    assert {e["strategy"] for e in data["estimates"]} == {"ddp", "zero2", "fsdp", "zero3"}


def test_plan_errors_name_the_fix(capsys):
    assert main(["--model", "llama-3.1-8b", "--device", "tpu-v5"]) == 2
    assert "known generations" in capsys.readouterr().err
    assert main(["--model", "llama-3.1-8b", "--world", "0"]) == 2
    assert "world" in capsys.readouterr().err


def test_dispatched_by_the_pytest_genai_command(capsys):
    from pytest_genai.cli import main as top

    assert top(["plan", "--model", "gemma-2-27b", "--device", "gaudi3", "--method", "lora", "--seq-len", "1024"]) == 0
    assert "recommended: ddp" in capsys.readouterr().out
