"""Optional packages of a fine-tuning run: a missing one is a skip reason naming the install command."""
import importlib.machinery
import importlib.util

import pytest

from pytest_genai.devices.device import HPU_EXTRA_INSTALL
from pytest_genai.train import requirements, run
from pytest_genai.train.config import ThroughputConfig
from pytest_genai.train.lora import LoraSpec
from pytest_genai.runtime.launcher import LaunchSpec
from pytest_genai.train.requirements import MissingRequirement, missing_requirement, skip_unless_installed


@pytest.fixture
def packages(monkeypatch):
    """``packages(missing=..., present=...)``: make top-level packages look uninstalled / installed to
    importlib.util.find_spec; others are looked up for real."""
    real = importlib.util.find_spec

    def fake(missing=(), present=()):
        def find_spec(name, package=None):
            top = name.split(".")[0]
            if top in missing:
                if "." in name:  # find_spec of a submodule imports its parent first
                    raise ModuleNotFoundError(f"No module named {top!r}")
                return None
            if top in present:
                return importlib.machinery.ModuleSpec(name, None)
            return real(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)

    return fake


def test_zero3_without_deepspeed_names_the_install_command(packages):
    packages(missing=["deepspeed"])
    assert missing_requirement("zero3", "cpu") == (
        "DeepSpeed ZeRO-3 needs the deepspeed package, which is not installed: pip install 'pytest-genai[deepspeed]'")
    assert "DeepSpeed ZeRO-2" in missing_requirement("zero2", "cuda")
    for strategy in ("ddp", "fsdp", None):
        assert missing_requirement(strategy, "cpu") is None


def test_lora_without_peft_names_the_install_command(packages):
    packages(missing=["peft"])
    assert missing_requirement("ddp", "cpu", "lora") == (
        "LoRA fine-tuning needs the peft package, which is not installed: pip install 'pytest-genai[lora]'")
    assert missing_requirement("ddp", "cpu", "full") is None
    with pytest.raises(MissingRequirement, match="peft"):
        requirements.check_requirements(ThroughputConfig(model="llama-3.1-8b", lora=LoraSpec()), "cpu")


def test_hpu_path_needs_the_gaudi_stack_optimum_habana_and_for_zero_deepspeed(packages):
    packages(missing=["habana_frameworks"])
    assert "Intel Gaudi software stack" in missing_requirement("ddp", "hpu")
    packages(missing=["optimum"], present=["habana_frameworks"])
    assert missing_requirement("fsdp", "hpu") == ("the hpu training path (optimum-habana's GaudiTrainer) needs the "
                                                  "optimum.habana package, which is not installed: "
                                                  + HPU_EXTRA_INSTALL)
    packages(missing=["deepspeed"], present=["habana_frameworks", "optimum"])
    assert missing_requirement("ddp", "hpu") is None
    assert "pytest-genai[deepspeed]" in missing_requirement("zero3", "hpu")


def test_installed_packages_need_nothing():
    assert missing_requirement("ddp", "cpu") is None
    if importlib.util.find_spec("deepspeed") is not None:
        assert missing_requirement("zero3", "cpu") is None


def test_skip_unless_installed_skips_with_the_reason(packages):
    cfg = ThroughputConfig(model="gemma-2-27b", strategy="zero3")
    packages(present=["deepspeed"])
    skip_unless_installed(cfg, "cpu")  # installed: no skip
    packages(missing=["deepspeed"])
    with pytest.raises(pytest.skip.Exception, match=r"pip install 'pytest-genai\[deepspeed\]'"):
        skip_unless_installed(cfg, "cpu")
    skip_unless_installed(ThroughputConfig(model="gemma-2-27b", strategy="ddp"), "cpu")


def test_launch_config_refuses_before_starting_any_rank(packages, monkeypatch, tmp_path):
    packages(missing=["deepspeed"])
    monkeypatch.setattr(run, "launch", lambda *a, **k: pytest.fail("launched a job that cannot run"))
    with pytest.raises(MissingRequirement, match=r"ZeRO-3 needs the deepspeed package.*pytest-genai\[deepspeed\]"):
        run.launch_config(ThroughputConfig(model="gemma-2-27b", strategy="zero3"), "cpu", LaunchSpec(), tmp_path)
    assert requirements.installed("json") and not requirements.installed("deepspeed.ops")


def test_deepspeed_on_gaudi_names_habanas_fork_and_refuses_upstream(packages, monkeypatch):
    """optimum-habana runs ZeRO on Gaudi only through HabanaAI's fork; the upstream install hint would replace it."""
    packages(missing=["deepspeed"], present=["habana_frameworks", "optimum"])
    reason = missing_requirement("zero3", "hpu")
    assert "HabanaAI/DeepSpeed" in reason and "pytest-genai[deepspeed]" in reason.split("(")[-1]
    assert "HabanaAI" not in missing_requirement("zero3", "cuda")
    packages(present=["habana_frameworks", "optimum", "deepspeed"])
    monkeypatch.setattr(requirements, "deepspeed_version", lambda: "0.18.2")
    assert "needs HabanaAI's DeepSpeed fork, and deepspeed 0.18.2 (upstream) is installed" in missing_requirement(
        "zero3", "hpu")
    monkeypatch.setattr(requirements, "deepspeed_version", lambda: "0.16.1+hpu.synapse.v1.22.0")
    assert missing_requirement("zero3", "hpu") is None and missing_requirement("ddp", "hpu") is None
