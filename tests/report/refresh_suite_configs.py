"""Rewrite ``suite_configs.json`` from a real run: one row per benchmark, its whole recorded config (identity and
environment merged, as a file written before the split held it).

    GENAI_DATA_DIR=/work/shared/data python3 -m pytest benchmarks -m cpu --benchmark-json run.json
    python3 tests/report/refresh_suite_configs.py run.json

The data folder must be ``/work/shared/data`` and the cache ``/root/.cache`` (``test_identity_pairing`` moves those
two prefixes to other machines' folders); the run's own working folder is replaced by ``/work/main``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def rows(run: dict) -> list[dict]:
    out = []
    for bench in run["benchmarks"]:
        genai = bench["extra_info"]["genai"]
        config = {**genai["config"], **genai.get("environment", {})}
        config = json.loads(json.dumps(config).replace(str(REPO), "/work/main"))
        out.append({"name": bench["name"], "experiment": genai["experiment"], "model": genai["model"],
                    "device": genai["device"]["generation"], "config": config})
    return sorted(out, key=lambda r: (r["experiment"], r["name"]))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = HERE / "suite_configs.json"
    lines = [json.dumps(row) for row in rows(json.loads(Path(argv[0]).read_text()))]
    text = "[\n" + ",\n".join(lines) + "\n]\n"  # one benchmark per line: diffs show what changed
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    print(f"{path}: {len(lines)} benchmarks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
