#!/usr/bin/env python3
"""Regenerate the embedded evaluation slice (``pytest_genai/evals/embedded/``) from a full data dir.

    python3 scripts/make_embedded_slice.py ../shared/data            # rewrite the slice and its manifest
    python3 scripts/make_embedded_slice.py ../shared/data --check    # exit 1 if the committed slice differs

What is cut (byte for byte: whole lines of the source files, nothing re-encoded), for the ``tiny`` scale of
``pytest_genai.evals.config.PRESETS`` (its seed, its HellaSwag / BoolQ counts, its WikiText token cap):

* WikiText-2 raw test: whole pages. The split's first page (the throughput batch and the fine-tune read the text
  from its start) and the first ``--seeded-pages`` pages of the seeded page order that ``slice_wikitext`` draws
  from (the tiny slice is the first of them, cut at its token cap), written in the split's order.
* HellaSwag and BoolQ (validation): exactly the examples ``select_subset`` picks at the tiny scale, in the split's
  order, each line as it is in the source.

``manifest.json`` records each file's sha256 and size, the source file it was cut from (its sha256 and the
1-based line numbers taken), each record's position in the split and the split's size (so the loader draws the
same selection as the full data), and the selection it was made for. ``ATTRIBUTION.md`` (licences) is kept by hand.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package, not another install's

from pytest_genai.evals import data  # noqa: E402
from pytest_genai.evals.config import PRESETS  # noqa: E402

OUT = Path(data.__file__).resolve().parent / "embedded"
#: upstream provenance of the shared copies (see shared/data/README.md)
UPSTREAM = {
    "wikitext": "WikiText-2 raw (wikitext-2-raw-v1) test split, Merity et al. 2016 (CC BY-SA 3.0); shared copy of "
                "GitHub Tylogi/TyloQuant data/wikitext-2-raw/wiki.test.raw (CRLF, blank lines removed)",
    "hellaswag": "HellaSwag validation, Zellers et al. 2019 (MIT); shared copy derived from GitHub "
                 "klosax/hellaswag_text_data hellaswag_val_full.txt (llama.cpp preprocessing), one JSON object a task",
    "boolq": "BoolQ validation (dev), Clark et al. 2019 (CC BY-SA 3.0), SuperGLUE layout; shared copy of GitHub "
             "FormulaMonks/llm-benchmarker-suite data/SuperGLUE/BoolQ/val.jsonl",
}


def _lines(raw: bytes) -> list[bytes]:
    return raw.splitlines(keepends=True)


def wikitext_pages_raw(raw: bytes) -> list[tuple[int, int, bytes]]:
    """The source's pages as (first line, last line, bytes), split where ``data.wikitext_pages`` splits them."""
    pages: list[list] = []
    for lineno, line in enumerate(_lines(raw), start=1):
        text = line.decode("utf-8").replace("\r\n", "\n")
        if data.is_title_line(text) or not pages:
            pages.append([lineno, lineno, b""])
        pages[-1][1] = lineno
        pages[-1][2] += line
    return [(a, b, body) for a, b, body in pages]


def cut_wikitext(src: Path, seeded_pages: int, budget) -> tuple[bytes, dict]:
    raw = src.read_bytes()
    pages = wikitext_pages_raw(raw)
    corpus = data.read_wikitext_file(src)
    assert b"".join(p[2] for p in pages) == raw, "pages must tile the file"
    assert [p[2].decode().replace("\r\n", "\n") for p in pages] == [p.text for p in corpus.pages]
    order = list(range(len(pages)))
    random.Random(budget.seed).shuffle(order)  # the order slice_wikitext draws with a token cap
    chosen = sorted({0, *order[:seeded_pages]})
    body = b"".join(pages[i][2] for i in chosen)
    entry = {
        "task": "wikitext", "dataset": data.TASKS["wikitext"].dataset[0], "split": data.TASKS["wikitext"].dataset[1],
        "records": f"{len(chosen)} whole pages",
        "population": len(pages), "positions": chosen,
        "titles": [corpus.pages[i].title for i in chosen],
        "cut_from": {"file": data.DATA_FILES["wikitext"], "sha256": _sha(raw), "bytes": len(raw),
                     "lines": [[pages[i][0], pages[i][1]] for i in chosen], "upstream": UPSTREAM["wikitext"]},
        "selection": {"seed": budget.seed, "wikitext_tokens": budget.wikitext_tokens,
                      "rule": f"the split's first page and the first {seeded_pages} pages of the seeded order"},
    }
    return body, entry


def cut_jsonl(task: str, src: Path, budget) -> tuple[bytes, dict]:
    raw = src.read_bytes()
    lines = _lines(raw)
    items = data.TASKS[task].read_file(src)
    assert [item.idx for item in items] == list(range(len(items))), "idx must be the position in the split"
    assert len(lines) == len(items), "one record a line, no blank lines"
    limit = budget.examples(task)
    chosen = [item.idx for item in data.select_subset(items, limit, budget.seed)]
    body = b"".join(lines[i] for i in chosen)
    entry = {
        "task": task, "dataset": data.TASKS[task].dataset[0], "split": data.TASKS[task].dataset[1],
        "records": f"{len(chosen)} examples",
        "population": len(items), "positions": chosen,
        "cut_from": {"file": data.DATA_FILES[task], "sha256": _sha(raw), "bytes": len(raw),
                     "lines": [i + 1 for i in chosen], "upstream": UPSTREAM[task]},
        "selection": {"seed": budget.seed, "examples": limit,
                      "rule": "exactly the examples select_subset picks at the tiny scale, in the split's order"},
    }
    return body, entry


def build(data_dir: Path, out: Path, seeded_pages: int) -> None:
    budget, _ = PRESETS["tiny"]
    files = {}
    for task in data.TASKS:
        rel = data.DATA_FILES[task]
        src = data_dir / rel
        if task == "wikitext":
            body, entry = cut_wikitext(src, seeded_pages, budget)
        else:
            body, entry = cut_jsonl(task, src, budget)
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        files[rel] = {"sha256": _sha(body), "bytes": len(body), **entry}
    manifest = {
        "about": "Evaluation slice shipped with pytest-genai: cut byte for byte (whole lines) from the offline copies "
                 "described in shared/data/README.md by scripts/make_embedded_slice.py; licences in ATTRIBUTION.md. "
                 "'positions' are the records' 0-based places in the split of 'population' records; "
                 "'cut_from.lines' the 1-based source lines.",
        "scale": "tiny",
        "files": files,
    }
    (out / data.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, help="a full data dir (layout of shared/data)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the slice (default {OUT})")
    parser.add_argument("--seeded-pages", type=int, default=3,
                        help="WikiText pages to take from the front of the seeded order (default 3)")
    parser.add_argument("--check", action="store_true", help="build into a temporary folder and compare with --out")
    args = parser.parse_args(argv)
    missing = [rel for rel in data.DATA_FILES.values() if not (args.data_dir / rel).is_file()]
    if missing:
        print(f"make_embedded_slice: {args.data_dir} lacks {', '.join(missing)}", file=sys.stderr)
        return 2
    if not args.check:
        build(args.data_dir, args.out, args.seeded_pages)
        print(f"wrote {args.out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(args.data_dir, Path(tmp), args.seeded_pages)
        names = [data.MANIFEST, *data.DATA_FILES.values()]
        differ = [n for n in names if (Path(tmp) / n).read_bytes() != _read(args.out / n)]
    if differ:
        print(f"make_embedded_slice: {args.out} differs from a rebuild from {args.data_dir}: {', '.join(differ)}",
              file=sys.stderr)
        return 1
    print(f"{args.out} matches a rebuild from {args.data_dir}")
    return 0


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


if __name__ == "__main__":
    sys.exit(main())
