"""scripts/check_install_plan.py: the container recipe's check that pip keeps the vendor's torch (docs/containers.md).

The plan-checking logic runs on canned pip reports (no network); then once against the real pip, offline
(``--no-index`` with a local fake wheel), in both directions.
"""
from __future__ import annotations

import importlib.util
import json
import os
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_install_plan", ROOT / "scripts" / "check_install_plan.py")
plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plan)  # type: ignore[union-attr]

NGC_TORCH = "2.4.0a0+3bcc3cddb5.nv24.07"


def report(*installs: tuple[str, str]) -> dict:
    """The shape of pip's --report (version 1): what it would install, with each item's metadata."""
    return {"version": "1", "pip_version": "24.0", "install": [
        {"download_info": {"url": f"https://files.example/{n}-{v}.whl"}, "is_direct": False, "requested": True,
         "metadata": {"metadata_version": "2.1", "name": n, "version": v}} for n, v in installs]}


def test_a_plan_that_replaces_the_vendor_torch_fails() -> None:
    pins = {"torch": NGC_TORCH}
    assert plan.plan_problems(report(("transformers", "4.55.4"), ("Torch", "2.6.0")), pins) == [
        f"pip would replace torch {NGC_TORCH} with 2.6.0"]
    assert plan.plan_problems(report(("habana_torch_plugin", "1.19.0")),
                              {"habana-torch-plugin": "1.18.0.524"}) == [
        "pip would replace habana-torch-plugin 1.18.0.524 with 1.19.0"]


def test_a_plan_that_keeps_it_passes_and_no_torch_at_all_fails() -> None:
    assert plan.plan_problems(report(("transformers", "4.55.4"), ("datasets", "3.2.0")), {"torch": NGC_TORCH}) == []
    assert plan.plan_problems(report(), {"torch": NGC_TORCH}) == []
    assert plan.plan_problems(report(("torch", "2.6.0")), {}) == [
        "pip would install torch 2.6.0, but the image has none: use the vendor's image"]


def test_pins_and_requirements() -> None:
    versions = {"torch": NGC_TORCH, "habana-torch-plugin": None, "torchvision": "0.19.0a0"}
    pins = plan.vendor_pins(versions.get, names=("torch", "habana-torch-plugin", "torchvision"))
    assert pins == {"torch": NGC_TORCH, "torchvision": "0.19.0a0"}
    assert plan.constraints_text(pins).splitlines()[1:] == [f"torch=={NGC_TORCH}", "torchvision==0.19.0a0"]
    reqs = plan.suite_requirements(ROOT / "pyproject.toml", ["deepspeed"])
    assert not [r for r in reqs if plan.requirement_name(r) in plan.TORCH_FAMILY]
    assert "transformers>=4.55" in reqs and "deepspeed>=0.15" in reqs
    with pytest.raises(ValueError, match="unknown extra"):
        plan.suite_requirements(ROOT / "pyproject.toml", ["gpu"])


def test_main_on_a_canned_report(tmp_path: Path, capsys) -> None:
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_text(json.dumps(report(("torch", "9.9.9"))))
    good.write_text(json.dumps(report(("datasets", "3.2.0"))))
    files = ["--constraints", str(tmp_path / "c.txt"), "--requirements", str(tmp_path / "r.txt")]
    assert plan.main(files + ["--report", str(bad)]) == 1
    assert "with 9.9.9" in capsys.readouterr().err
    assert plan.main(files + ["--report", str(good)]) == 0
    assert "pip would install: datasets 3.2.0" in capsys.readouterr().out
    assert (tmp_path / "c.txt").read_text().count("torch==") == 1  # this environment has a torch


def fake_wheel(folder: Path, name: str, version: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")
    return path


def test_the_real_pip_offline(tmp_path: Path, monkeypatch) -> None:
    installed = plan.installed_version("torch")
    if installed is None:
        pytest.skip("torch is not installed here: nothing for pip to keep")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # this machine's pip.conf may hold constraints of its own
    fake_wheel(tmp_path / "wheels", "torch", "99.0")
    offline = ["--no-index", "--find-links", str(tmp_path / "wheels")]
    pins = {"torch": installed}
    pinned, unpinned, wants_new = tmp_path / "pins.txt", tmp_path / "none.txt", tmp_path / "new.txt"
    pinned.write_text(plan.constraints_text(pins))
    unpinned.write_text("")
    wants_new.write_text("torch>=99\n")
    satisfied = tmp_path / "have.txt"
    satisfied.write_text("pytest>=8\npytest-benchmark\n")
    # already satisfied under the pins: an empty plan
    got, error = plan.pip_plan(pinned, satisfied, offline)
    assert got is not None, error
    assert plan.plan_problems(got, pins) == []
    # without the pins a requirement pulls a new torch over the installed one: caught
    got, error = plan.pip_plan(unpinned, wants_new, offline)
    assert got is not None, error
    assert plan.plan_problems(got, pins) == [f"pip would replace torch {installed} with 99.0"]
    # with the pins pip cannot make that plan at all: the script's exit 2, with pip's reason
    got, error = plan.pip_plan(pinned, wants_new, offline)
    assert got is None and "torch" in error


@pytest.mark.parametrize("flag", ["--constraints", "--requirements"])
def test_an_unwritable_output_is_a_one_line_error_naming_the_flag(tmp_path: Path, capsys, flag) -> None:
    """A path that cannot be written (a missing folder; another user's file in a shared /tmp) was a traceback."""
    files = {"--constraints": str(tmp_path / "c.txt"), "--requirements": str(tmp_path / "r.txt")}
    files[flag] = str(tmp_path / "missing" / "x.txt")
    args = [x for pair in files.items() for x in pair] + ["--report", str(tmp_path / "unused.json")]
    assert plan.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"cannot write {files[flag]}" in err and f"pass {flag} PATH" in err
