#!/usr/bin/env python3
"""Install the suite into a vendor container without replacing its torch: write the pins, then ask pip first.

In the Intel Gaudi and NVIDIA NGC PyTorch images torch is the vendor's own build (``2.4.0a0+...nv24.08``,
``2.4.0a0+git...`` with habana-torch-plugin); a plain ``pip install -e .`` may see ``torch>=2.4`` unmet by a
pre-release and pull a PyPI wheel over it. The recipe in docs/containers.md therefore installs the suite with
``--no-deps`` and its other dependencies under a constraints file that pins the installed vendor packages. This
script:

1. writes that constraints file (``torch==<installed version>``, and torchvision, triton, habana-* where installed)
   and a requirements file with the suite's dependencies from pyproject.toml (torch left out; ``--extras`` adds
   optional groups);
2. asks pip for the install plan of those requirements under those constraints (``pip install --dry-run --report -``;
   nothing is installed), and
3. exits 1 when the plan would install or replace a pinned vendor package (or install torch where none is), 2 when
   pip cannot make a plan (a conflict with the pins: pip's message is shown), 0 otherwise.

``--report FILE`` checks a pip report written earlier instead of calling pip (what the tests do). Arguments after
``--`` go to pip (e.g. ``--no-index --find-links wheels/`` on an offline node).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
VENDOR_PACKAGES = (
    "torch", "torchvision", "torchaudio", "triton", "pytorch-triton",
    "habana-torch-plugin", "habana-torch-dataloader", "habana-pyhlml",
)
"""Distributions a vendor image ships built for its stack: pinned to what is installed, never replaced."""
TORCH_FAMILY = {"torch", "torchvision", "torchaudio", "triton", "pytorch-triton"}
"""Left out of the suite's requirements: the image provides them."""


def canonical(name: str) -> str:
    """PEP 503 name: ``Habana_Torch.Plugin`` → ``habana-torch-plugin``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def vendor_pins(version_of: Callable[[str], str | None] = installed_version,
                names: Iterable[str] = VENDOR_PACKAGES) -> dict[str, str]:
    """``{name: installed version}`` for each vendor package that is installed."""
    found = {canonical(n): version_of(n) for n in names}
    return {n: v for n, v in found.items() if v}


def constraints_text(pins: Mapping[str, str]) -> str:
    lines = ["# the vendor image's own builds: pip may not replace them (scripts/check_install_plan.py)"]
    return "\n".join(lines + [f"{name}=={version}" for name, version in pins.items()]) + "\n"


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10 (the vendor images' Python): tomli, or the copy pip vendors
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            from pip._vendor import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(path.read_text(encoding="utf-8"))


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"{requirement!r} is not a requirement")
    return canonical(match.group(1))


def suite_requirements(pyproject: Path, extras: Sequence[str] = ()) -> list[str]:
    """The suite's dependencies (and those of ``extras``) from pyproject.toml, without the torch family."""
    project = _load_toml(pyproject)["project"]
    groups = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in groups]
    if unknown:
        raise ValueError(f"unknown extra(s) {', '.join(unknown)}; pyproject.toml has {', '.join(sorted(groups))}")
    wanted = list(project.get("dependencies", [])) + [r for e in extras for r in groups[e]]
    return list(dict.fromkeys(r for r in wanted if requirement_name(r) not in TORCH_FAMILY))


def plan_problems(report: Mapping[str, Any], pins: Mapping[str, str]) -> list[str]:
    """What in pip's install report (``pip install --dry-run --report``) would touch the vendor stack: a pinned
    package installed at all (pip lists only what it would install or replace), or torch where none is installed."""
    protected = dict(pins)
    protected.setdefault("torch", "")  # no torch in the image: installing one from PyPI is not this recipe either
    problems = []
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        name, version = canonical(str(meta.get("name", "?"))), meta.get("version", "?")
        if name in protected:
            was = protected[name]
            problems.append(f"pip would replace {name} {was} with {version}" if was else
                            f"pip would install {name} {version}, but the image has none: use the vendor's image")
    return problems


def planned(report: Mapping[str, Any]) -> list[str]:
    return [f"{item['metadata']['name']} {item['metadata']['version']}" for item in report.get("install", [])]


def pip_plan(constraints: Path, requirements: Path, pip_args: Sequence[str]) -> tuple[dict[str, Any] | None, str]:
    """pip's install report for ``-r requirements -c constraints`` (nothing installed), or None and pip's error."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
           "-c", str(constraints), "-r", str(requirements), *pip_args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, (done.stderr or done.stdout).strip()
    try:
        return json.loads(done.stdout), ""
    except json.JSONDecodeError:
        return None, f"pip printed no JSON report (pip >= 22.2 is needed): {done.stdout[:200]!r}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pip_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="check_install_plan.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--constraints", default="/tmp/vendor-torch.txt", help="constraints file to write")
    parser.add_argument("--requirements", default="/tmp/suite-requirements.txt", help="requirements file to write")
    parser.add_argument("--extras", default="", help="optional dependency groups to add, comma separated (e.g. ci)")
    parser.add_argument("--report", default=None, help="check this pip report JSON instead of calling pip")
    args = parser.parse_args(argv)
    pins = vendor_pins()
    try:
        reqs = suite_requirements(ROOT / "pyproject.toml", [e for e in args.extras.split(",") if e])
    except ValueError as exc:
        print(f"check_install_plan: --extras: {exc}", file=sys.stderr)
        return 2
    constraints, requirements = Path(args.constraints), Path(args.requirements)
    for flag, path, text in (("--constraints", constraints, constraints_text(pins)),
                             ("--requirements", requirements, "\n".join(reqs) + "\n")):
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:  # an unwritable folder, another user's file in a shared /tmp
            print(f"check_install_plan: cannot write {path}: {exc.strerror or exc}; pass {flag} PATH in a folder "
                  "you own", file=sys.stderr)
            return 2
    print(f"pins ({constraints}): {', '.join(f'{n}=={v}' for n, v in pins.items()) or 'none: torch is not installed'}")
    if args.report:
        report: dict[str, Any] | None = json.loads(Path(args.report).read_text(encoding="utf-8"))
    else:
        report, error = pip_plan(constraints, requirements, pip_args)
        if report is None:
            print(f"check_install_plan: pip cannot install {requirements} under {constraints}: {error}",
                  file=sys.stderr)
            return 2
    problems = plan_problems(report, pins)
    print(f"pip would install: {', '.join(planned(report)) or 'nothing (all satisfied)'}")
    for problem in problems:
        print(f"check_install_plan: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"ok: the vendor stack stays as it is; now: pip install --no-deps -e . && "
          f"pip install -c {constraints} -r {requirements}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
