"""Which benchmark checks which claim, on which device kinds, read from the ``claims`` markers
(``@pytest.mark.claims("B2.cpu_dp_weak_scaling", kinds=("cpu",))``): ``genai.check`` refuses an undeclared id, so the
markers are the truth about coverage.
"""
from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from pytest_genai.claims.model import Claim


@dataclasses.dataclass(frozen=True)
class Checker:
    test: str  # "benchmarks/test_x.py::test_name" (parametrization stripped)
    kinds: tuple[str, ...]


def claim_kinds(claim: Claim) -> set[str] | None:
    """The device kinds a claim can apply to (its devices are kinds or generations); None = any kind."""
    if not claim.devices:
        return None
    from pytest_genai.devices.device import KINDS
    from pytest_genai.devices.specs import load_specs

    specs = load_specs()  # load_claims checked that each device is a kind or a generation
    return {name if name in KINDS else specs[name].kind for name in claim.devices}


def checkers_by_claim(markers: Iterable[Mapping[str, Any]]) -> dict[str, list[Checker]]:
    """``{claim id: [Checker, ...]}`` from collected markers ``{"test", "ids", "kinds"}``."""
    out: dict[str, list[Checker]] = {}
    for m in markers:
        checker = Checker(m["test"], tuple(m["kinds"]))
        for cid in m["ids"]:
            if checker not in out.setdefault(cid, []):
                out[cid].append(checker)
    return out


def checked_on(claim: Claim, checkers: Sequence[Checker]) -> list[str]:
    """The benchmarks (``test [kinds]``) that can check ``claim``; the gate for generation claims."""
    if claim.kind == "generation":
        return ["pytest-genai gate"]
    wanted = claim_kinds(claim)
    return [f"{c.test} [{','.join(sorted(set(c.kinds) & wanted) if wanted else c.kinds)}]" for c in checkers
            if wanted is None or set(c.kinds) & wanted]


def dead_claims(claims: Iterable[Claim], markers: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of claims that no benchmark checks on any device they apply to."""
    by_claim = checkers_by_claim(markers)
    return [c.id for c in claims if not checked_on(c, by_claim.get(c.id, []))]


def collect(bench_dir: str | Path, timeout_s: float = 300.0) -> list[dict[str, Any]]:
    """The ``claims`` markers of every benchmark under ``bench_dir`` (collected in a child process)."""
    proc = subprocess.run([sys.executable, "-m", "pytest_genai.claims.coverage", str(bench_dir)],
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"collecting {bench_dir} for claim coverage failed: {' | '.join(tail)}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class _Collector:
    def __init__(self) -> None:
        self.markers: dict[str, dict[str, Any]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            for mark in item.iter_markers("claims"):
                test = item.nodeid.split("[")[0]
                entry = self.markers.setdefault(test, {"test": test, "ids": [], "kinds": []})
                entry["ids"] = sorted(set(entry["ids"]) | set(mark.args))
                entry["kinds"] = sorted(set(entry["kinds"]) | set(mark.kwargs.get("kinds", ())))


def main(argv: list[str] | None = None) -> int:
    import pytest

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pytest_genai.claims.coverage BENCHMARKS_DIR", file=sys.stderr)
        return 2
    collector = _Collector()
    with redirect_stdout(io.StringIO()) as captured:
        code = pytest.main([args[0], "--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[collector])
    if code not in (0, 5):
        sys.stderr.write(captured.getvalue())
        return 1
    print(json.dumps(sorted(collector.markers.values(), key=lambda m: m["test"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
