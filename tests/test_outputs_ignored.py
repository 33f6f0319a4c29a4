"""Following the README's and docs' commands in a checkout leaves ``git status`` clean: every output file they name
(``--benchmark-json``, ``--genai-report``, ``--genai-plots``, ``GENAI_STORE``, ``-o`` in their bash blocks) is
ignored by .gitignore."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = re.compile(r"(?:--benchmark-json|--genai-report|--genai-plots|--genai-store|GENAI_STORE|\s-o)[ =]([\w./-]+)")
#: Written by default, so named in no option: `pytest-genai history METRIC`'s plot.
DEFAULT_OUTPUTS = ("history-tokens_per_s.png",)


def documented_outputs() -> list[str]:
    names = set(DEFAULT_OUTPUTS)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            names.update(OUTPUT.findall(block))
    # placeholders (DIR, OUT) and paths outside the checkout are not files a command writes here
    return sorted(n for n in names if not n.isupper() and not n.startswith(("/", "~", ".")))


def test_the_documented_outputs_are_found() -> None:
    outputs = documented_outputs()
    assert {"out.json", "report.md", "plots/", "results.sqlite"} <= set(outputs), outputs


def test_every_documented_output_is_ignored_by_git() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    # a folder is checked through a file in it (a pattern like /plots/ matches the folder's contents)
    paths = [n + "x.png" if n.endswith("/") else n for n in documented_outputs()]
    proc = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"], input="\n".join(paths),
                          capture_output=True, text=True)
    ignored = set(proc.stdout.split())
    assert [p for p in paths if p not in ignored] == []
