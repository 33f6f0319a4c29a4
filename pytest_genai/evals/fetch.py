"""``pytest-genai data fetch DIR``: download the full evaluation splits and write them in the ``--genai-data-dir``
layout, for machines with network access (the benchmarks themselves never download).

Each task is loaded with ``datasets.load_dataset`` under the hub names lm-evaluation-harness uses (its
``data.TASKS`` entry's ``hub``), converted to the data dir's file (its ``file``, the names of ``shared/data``) and
read back with the suite's own reader (its ``read_file``). HellaSwag is written with lm-eval's preprocessing (the
query ``activity_label: ctx_a + " " + ctx_b.capitalize()`` cleaned, split at its first ``": "``), so a fetched folder
gives the same examples as the Hugging Face cache. Nothing is written until every split has downloaded; then each
file is written atomically, with ``SHA256SUMS`` (``sha256sum -c`` format) and ``manifest.json`` (hub id, config,
split, records, sha256 per file).

Exit codes: 0 written; 1 a download failed (no network, hub error); 2 unusable arguments (DIR not empty without
``--force``, DIR is a file, an unknown task).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from pytest_genai.evals import data

PROG = "pytest-genai data"


class FetchError(Exception):
    """A one-line reason the fetch stopped; ``code`` is the exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


# -- hub rows -> data dir files (pure) -----------------------------------------------------------------------------
def wikitext_bytes(rows: Iterable[dict[str, Any]]) -> bytes:
    """The hub's line rows joined into the raw file (each text row ends in ``\\n``; the blank rows, empty on the hub,
    become the file's ``" \\n"`` again: :func:`~pytest_genai.evals.data.raw_wikitext_lines`): LF."""
    texts = (_field(row, "text", i) for i, row in enumerate(rows))
    return "".join(data.raw_wikitext_lines(texts)).encode("utf-8")


def hellaswag_bytes(rows: Iterable[dict[str, Any]]) -> bytes:
    """One ``{"idx", "activity_label", "ctx", "label", "endings"}`` object a line, with lm-eval's preprocessing."""
    lines = []
    for i, row in enumerate(rows):
        for field in ("activity_label", "ctx_a", "ctx_b", "endings", "label"):
            _field(row, field, i)
        item = data.hellaswag_from_hub_row(row, i)
        label, sep, ctx = item.query.partition(": ")
        if not sep:
            raise FetchError(f"hellaswag row {i}: the cleaned query has no ': ' after the activity label", 1)
        lines.append({"idx": i, "activity_label": label, "ctx": ctx, "label": item.label,
                      "endings": list(item.endings)})
    return _jsonl(lines)


def boolq_bytes(rows: Iterable[dict[str, Any]]) -> bytes:
    """SuperGLUE layout: ``question``, ``passage``, ``idx``, ``label`` (a JSON boolean, true = yes)."""
    lines = []
    for i, row in enumerate(rows):
        label = _field(row, "label", i)
        if label not in (0, 1) or isinstance(label, str):
            raise FetchError(f"boolq row {i}: label {label!r} is not 0/1", 1)
        lines.append({"question": _field(row, "question", i), "passage": _field(row, "passage", i),
                      "idx": int(_field(row, "idx", i)), "label": bool(label)})
    return _jsonl(lines)


#: task -> its hub rows as the data dir's file (here, not on data.EvalTask: they raise this module's FetchError)
CONVERTERS: dict[str, Callable[[Iterable[dict[str, Any]]], bytes]] = {
    "wikitext": wikitext_bytes, "hellaswag": hellaswag_bytes, "boolq": boolq_bytes,
}


def _field(row: Any, field: str, i: int) -> Any:
    try:
        return row[field]
    except (KeyError, TypeError, IndexError):
        raise FetchError(f"row {i} has no field {field!r}; the hub dataset's layout is not the one expected", 1) from None


def _jsonl(objects: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects).encode("utf-8")


# -- the command ---------------------------------------------------------------------------------------------------
def download(task: str, load_dataset: Callable[..., Any]) -> list[dict[str, Any]]:
    """All rows of ``task``'s split, or :class:`FetchError` with a one-line reason."""
    repo, name, split = data.TASKS[task].hub
    what = f"{repo}" + (f" ({name})" if name else "") + f", split {split}"
    try:
        return list(load_dataset(repo, name, split=split))
    except Exception as exc:  # noqa: BLE001 - any failure of the download is reported in one line
        offline = [v for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if os.environ.get(v, "") not in ("", "0")]
        if offline:
            hint = f"{' and '.join(offline)} is set: unset it to download"
        elif _is_network_error(exc):
            hint = "no network: this command needs access to huggingface.co (run it on a machine online, then copy DIR)"
        else:
            hint = "the download failed"
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise FetchError(f"{task}: could not download {what}: {hint} ({type(exc).__name__}: {first})", 1) from None


#: exception class names (anywhere in the chain) that mean the hub could not be reached
_NETWORK_ERRORS = {"ConnectionError", "Timeout", "MaxRetryError", "NewConnectionError", "NameResolutionError",
                   "LocalEntryNotFoundError", "OfflineModeIsEnabled"}


def _is_network_error(exc: BaseException | None) -> bool:
    import socket

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        names = {cls.__name__ for cls in type(exc).__mro__}
        if isinstance(exc, (ConnectionError, TimeoutError, socket.gaierror)) or names & _NETWORK_ERRORS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def check_target(folder: Path, force: bool) -> None:
    if folder.exists() and not folder.is_dir():
        raise FetchError(f"{folder} is a file, not a folder; give a folder to write the data into", 2)
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise FetchError(f"{folder} is not empty; pass --force to overwrite its data files, or give a new folder", 2)


def fetch(folder: Path, tasks: Iterable[str] = data.TASKS, *, force: bool = False,
          load_dataset: Callable[..., Any] | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Download ``tasks`` and write them into ``folder``; returns the manifest written. ``load_dataset`` defaults
    to ``datasets.load_dataset`` (tests pass a fake)."""
    from pytest_genai.atomic import write_bytes_atomic, write_json_atomic

    tasks = list(tasks)
    check_target(folder, force)
    if load_dataset is None:
        try:
            from datasets import load_dataset
        except ImportError:
            raise FetchError("the `datasets` package is not installed: pip install 'datasets>=3.0'", 2) from None
    contents = {}
    for task in tasks:  # everything in memory first: a failed download writes nothing
        log(f"downloading {task} ({data.TASKS[task].hub[0]}) ...")
        contents[task] = CONVERTERS[task](download(task, load_dataset))
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for task in tasks:
        spec = data.TASKS[task]
        rel = spec.file
        path = write_bytes_atomic(folder / rel, contents[task])
        count = spec.count(spec.read_file(path))  # read back with the suite's reader: the layout is right
        repo, name, split = spec.hub
        files[rel] = {"task": task, "hub": repo, "config": name, "split": split, "bytes": len(contents[task]),
                      "records": count, "sha256": hashlib.sha256(contents[task]).hexdigest()}
        log(f"wrote {rel}: {count:,} {spec.unit}, sha256 {files[rel]['sha256']}")
    manifest = {"written_by": "pytest-genai data fetch", "files": files}
    write_json_atomic(folder / data.MANIFEST, manifest)
    sums = "".join(f"{entry['sha256']}  {rel}\n" for rel, entry in files.items())
    write_bytes_atomic(folder / "SHA256SUMS", sums.encode("utf-8"))
    return manifest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="evaluation data for --genai-data-dir")
    sub = parser.add_subparsers(dest="action", required=True, metavar="fetch")
    fetch_parser = sub.add_parser("fetch", help="download WikiText-2 (raw, test), HellaSwag and BoolQ (validation) "
                                                "into DIR, in the --genai-data-dir layout")
    fetch_parser.add_argument("dir", metavar="DIR", help="folder to write (created; must be empty unless --force)")
    fetch_parser.add_argument("--force", action="store_true", help="write into a non-empty DIR, replacing the data files")
    fetch_parser.add_argument("--tasks", default=",".join(data.TASKS),
                              help=f"comma-separated subset of {','.join(data.TASKS)} (default: all)")
    args = parser.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in data.TASKS]
    try:
        if unknown or not tasks:
            raise FetchError(f"--tasks: unknown task(s) {', '.join(unknown) or '(none given)'}; "
                             f"use a comma list of {', '.join(data.TASKS)}", 2)
        folder = Path(args.dir).expanduser()
        fetch(folder, tasks, force=args.force)
    except FetchError as exc:
        print(f"{PROG} fetch: {exc}", file=sys.stderr)
        return exc.code
    print(f"done: python3 -m pytest benchmarks -m cpu --genai-data-dir {folder}")
    return 0
