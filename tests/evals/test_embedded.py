"""The embedded evaluation slice: its files match the manifest, it is small and attributed, it selects exactly what
the full data selects at the tiny scale, it is rebuilt byte for byte by its script, and the README's commands need
no data folder."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_genai.evals import data, runner
from pytest_genai.evals.config import PRESETS, preset

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = data.EMBEDDED_DIR


@pytest.fixture(scope="module")
def manifest():
    return json.loads((EMBEDDED / data.MANIFEST).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def full_data():
    """The full offline copies: GENAI_DATA_DIR, else ../shared/data beside the checkout; skip without them."""
    for candidate in (os.environ.get("GENAI_DATA_DIR"), ROOT.parent / "shared" / "data"):
        if candidate and all((Path(candidate) / rel).is_file() for rel in data.DATA_FILES.values()):
            return Path(candidate)
    pytest.skip("the full evaluation data is absent (set GENAI_DATA_DIR or place it in ../shared/data)")


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr(data, "hub_cached", lambda repo, config=None: False)


def test_each_file_matches_its_manifest_sha256(manifest):
    assert set(manifest["files"]) == set(data.DATA_FILES.values())
    for rel, entry in manifest["files"].items():
        raw = (EMBEDDED / rel).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == entry["sha256"], rel
        assert len(raw) == entry["bytes"], rel
        assert len(entry["cut_from"]["sha256"]) == 64 and entry["cut_from"]["file"] == rel


def test_a_changed_file_is_refused(tmp_path, monkeypatch, no_hub):
    copy = tmp_path / "embedded"
    for rel in [data.MANIFEST, *data.DATA_FILES.values()]:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((EMBEDDED / rel).read_bytes())
    path = copy / data.DATA_FILES["boolq"]
    path.write_bytes(path.read_bytes().replace(b'"true"', b'"false"', 1))
    monkeypatch.setattr(data, "EMBEDDED_DIR", copy)
    with pytest.raises(data.DataFormatError, match="differs from the manifest.*make_embedded_slice"):
        data.load_task("boolq", None)


def test_it_is_small_whole_and_attributed(manifest):
    files = [p for p in EMBEDDED.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 300_000
    wiki = manifest["files"][data.DATA_FILES["wikitext"]]
    corpus = data.read_wikitext_file(EMBEDDED / data.DATA_FILES["wikitext"])
    assert len(corpus.pages) == len(wiki["positions"]) >= 3  # several whole articles
    assert [p.title for p in corpus.pages] == wiki["titles"]
    assert all(p.text.startswith(f" = {p.title} = \n") for p in corpus.pages)
    text = (EMBEDDED / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for needed in ("CC BY-SA 3.0", "Merity", "MIT License", "Copyright (c) 2019 Rowan Zellers", "Zellers", "Clark"):
        assert needed in text, needed


def test_manifest_was_cut_for_the_tiny_preset(manifest):
    budget, _ = PRESETS["tiny"]
    files = manifest["files"]
    assert files[data.DATA_FILES["wikitext"]]["selection"]["wikitext_tokens"] == budget.wikitext_tokens
    for task in data.TASKS:
        entry = files[data.DATA_FILES[task]]
        assert entry["selection"]["seed"] == budget.seed
        if task != "wikitext":
            assert entry["selection"]["examples"] == budget.examples(task) == len(entry["positions"])
            items = data.load_origin(data.Origin(task, "embedded", EMBEDDED / data.DATA_FILES[task]))
            assert [item.idx for item in items] == entry["positions"]


def test_no_data_dir_uses_the_embedded_slice_at_the_tiny_scale(no_hub):
    budget, _ = preset("tiny")
    for task in data.TASKS:
        selected = runner.select(task, budget, None, lambda text: len(text.split()))
        assert selected.source == f"embedded:{data.DATA_FILES[task]}"
        assert data.data_identity(task, None, selected.examples)["data_origin"] == "embedded"
    assert runner.select("boolq", budget, None, len).n_examples == 40


# tokenizers of very different granularity: the slice must hold every page each one's selection needs
COUNTERS = {"words": lambda t: len(t.split()), "bytes": lambda t: len(t.encode()), "chars/6": lambda t: len(t) // 6}


@pytest.mark.parametrize("limit", [None, 1, 3])
def test_tiny_selection_equals_the_full_datas(full_data, no_hub, limit):
    budget, _ = preset("tiny", limit)
    for task in data.TASKS:
        for name, count in COUNTERS.items() if task == "wikitext" else [("-", len)]:
            embedded = runner.select(task, budget, None, count).examples
            full = runner.select(task, budget, full_data, count).examples
            if task == "wikitext":
                assert (embedded.pages, embedded.page_indices, embedded.truncated) == \
                       (full.pages, full.page_indices, full.truncated), name
            else:
                assert embedded == full, task
            ident_e = data.data_identity(task, None, embedded)
            ident_f = data.data_identity(task, full_data, full)
            assert ident_e["sha256"] == ident_f["sha256"], (task, name)
            assert (ident_e["data_origin"], ident_f["data_origin"]) == ("embedded", "data_dir")


def test_the_embedded_wikitext_starts_like_the_full_split(full_data, no_hub):
    """The throughput batch and the fine-tune read the text from its start: the same tokens either way."""
    full = data.load_wikitext(full_data)
    embedded = data.load_wikitext(None)
    assert embedded.pages[0] == full.pages[0]
    assert all(page == full.pages[page.index] for page in embedded.pages)


def test_the_script_rebuilds_the_committed_slice(full_data, tmp_path):
    script = ROOT / "scripts" / "make_embedded_slice.py"
    out = subprocess.run([sys.executable, str(script), str(full_data), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_readme_and_ci_need_no_data_folder():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0].strip() for b in readme.split("```bash\n")[1:]]
    first, test = blocks[0], blocks[1]
    assert "python3 -m pytest benchmarks -m \"cpu and not selfcheck and not extension\"" in first and "--genai-data-dir" not in first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert f"{test} || status=$?" in ci  # the README's test command, run whatever its result (then the slow set)
    assert any(line.startswith("export GENAI_DATA_DIR=") and "shared/data" in line for line in ci)
