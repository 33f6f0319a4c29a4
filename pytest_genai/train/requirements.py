"""Optional packages a fine-tuning run needs, checked in the launching process before any rank starts.

A missing package is one line naming the install command: a skip reason for the benchmark
(:func:`skip_unless_installed`), or :class:`MissingRequirement` from :func:`pytest_genai.train.run.launch_config`,
instead of every rank failing with ``No module named ...`` inside a torchrun job. Only whether the module can be
found is checked (``importlib.util.find_spec``, nothing is imported: DeepSpeed's import is slow and may build ops).
"""
from __future__ import annotations

import importlib.util
from typing import Any

from pytest_genai.devices.device import HPU_EXTRA_INSTALL

DEEPSPEED = ("deepspeed", "pip install 'pytest-genai[deepspeed]'")
#: optimum-habana runs DeepSpeed on Gaudi only through HabanaAI's fork, one release per SynapseAI version (its
#: README: ``pip install git+https://github.com/HabanaAI/DeepSpeed.git@1.22.0``); upstream's wheel would replace it.
DEEPSPEED_HPU = ("deepspeed", "pip install git+https://github.com/HabanaAI/DeepSpeed.git@<your SynapseAI release, "
                              "e.g. 1.22.0> (HabanaAI's fork, as optimum-habana's README says; not pytest-genai[deepspeed])")
#: The fork's versions carry the SynapseAI release: ``0.16.1+hpu.synapse.v1.22.0``.
HPU_FORK_TAG = "+hpu.synapse"
PEFT = ("peft", "pip install 'pytest-genai[lora]'")
HABANA = (("habana_frameworks", "run on a Gaudi node with the Intel Gaudi software stack"),
          ("optimum.habana", HPU_EXTRA_INSTALL))
_STRATEGY_NAMES = {"zero2": "DeepSpeed ZeRO-2", "zero3": "DeepSpeed ZeRO-3"}


class MissingRequirement(RuntimeError):
    """An optional package the run needs is not installed; the message names the install command."""


def installed(module: str) -> bool:
    """True when ``module`` can be imported (found without importing it; a missing parent package is False)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # 'optimum.habana' without 'optimum', or a broken __spec__
        return False


def missing_requirement(strategy: str | None, device_kind: str, method: str = "full") -> str | None:
    """None when a run of ``strategy`` ('ddp', 'fsdp', 'zero2', 'zero3'; None for plain DDP) and ``method``
    ('full', 'lora') on ``device_kind`` has its optional packages, else the reason, naming the install command."""
    needs: list[tuple[str, str, str]] = []
    if method == "lora":
        needs.append((*PEFT, "LoRA fine-tuning"))
    if device_kind == "hpu":
        needs += [(module, fix, "the hpu training path (optimum-habana's GaudiTrainer)") for module, fix in HABANA]
    if strategy in _STRATEGY_NAMES:
        needs.append((*(DEEPSPEED_HPU if device_kind == "hpu" else DEEPSPEED), _STRATEGY_NAMES[strategy]))
    for module, fix, what in needs:
        if not installed(module):
            return f"{what} needs the {module} package, which is not installed: {fix}"
    if device_kind == "hpu" and strategy in _STRATEGY_NAMES:
        version = deepspeed_version()
        if version is not None and HPU_FORK_TAG not in version:
            return (f"{_STRATEGY_NAMES[strategy]} on Gaudi needs HabanaAI's DeepSpeed fork, and deepspeed {version} "
                    f"(upstream) is installed: {DEEPSPEED_HPU[1]}")
    return None


def deepspeed_version() -> str | None:
    """The installed DeepSpeed's version string (None when not installed); read from its metadata, not imported."""
    from importlib import metadata

    try:
        return metadata.version("deepspeed")
    except metadata.PackageNotFoundError:
        return None


def check_requirements(cfg: Any, device_kind: str) -> None:
    """Raise :class:`MissingRequirement` when ``cfg`` (a ThroughputConfig or WikitextConfig) cannot run here."""
    reason = missing_requirement(getattr(cfg, "strategy", None), device_kind, getattr(cfg, "method", "full"))
    if reason:
        raise MissingRequirement(reason)


def skip_unless_installed(cfg: Any, device_kind: str) -> None:
    """``pytest.skip`` with the install command when ``cfg`` needs a package that is not installed. Call it before
    ``benchmark.pedantic``: a skip raised inside a timed call leaves pytest-benchmark an empty measurement."""
    reason = missing_requirement(getattr(cfg, "strategy", None), device_kind, getattr(cfg, "method", "full"))
    if reason:
        import pytest

        pytest.skip(reason)
