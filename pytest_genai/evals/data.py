"""Evaluation data: WikiText-2 raw (test), HellaSwag (validation), BoolQ (validation).

Two sources, tried in this order:

1. ``data_dir`` (``--genai-data-dir``): offline copies in the layout of ``shared/data``::

       wikitext-2-raw-v1/test.raw    CRLF line endings, blank lines removed (see that folder's README)
       hellaswag/validation.jsonl    {"idx", "activity_label", "ctx", "label", "endings"}; ctx already cleaned
       boolq/validation.jsonl        SuperGLUE layout, ``label`` the string "true"/"false"

2. The Hugging Face hub names lm-evaluation-harness uses, via ``datasets.load_dataset`` -- only when the dataset is
   already in the local cache (nothing is downloaded here; a run without the data skips, naming the flag).

Parse errors name the file and the 1-based line. Records are small frozen dataclasses; ``select_subset`` draws the
fixed, seeded subset that ``--genai-limit`` asks for.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

T = TypeVar("T")

TASKS = ("wikitext", "hellaswag", "boolq")

#: task -> file inside ``--genai-data-dir``
DATA_FILES = {
    "wikitext": "wikitext-2-raw-v1/test.raw",
    "hellaswag": "hellaswag/validation.jsonl",
    "boolq": "boolq/validation.jsonl",
}

#: task -> (hub dataset id, config name, split): the names lm-evaluation-harness uses (WikiText: the raw line split)
HUB_DATASETS = {
    "wikitext": ("Salesforce/wikitext", "wikitext-2-raw-v1", "test"),
    "hellaswag": ("Rowan/hellaswag", None, "validation"),
    "boolq": ("aps/super_glue", "boolq", "validation"),
}

DATA_FLAG_HINT = "pass --genai-data-dir DIR (a folder laid out like shared/data) or set GENAI_DATA_DIR"

# A WikiText article title is " = Title = "; section headings are " = = Heading = = " and deeper.
_TITLE = re.compile(r"^ = (?!=).*[^=] = $")


class DataUnavailable(LookupError):
    """The dataset is neither in ``--genai-data-dir`` nor in the local Hugging Face cache."""


class DataFormatError(ValueError):
    """A data file does not have the expected layout; the message names the file and line."""


# -- records ---------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class WikiTextPage:
    """One WikiText article: its raw text (LF line endings, WikiText tokenisation such as ``@-@`` kept)."""

    index: int
    title: str
    text: str


@dataclasses.dataclass(frozen=True)
class WikiTextCorpus:
    pages: tuple[WikiTextPage, ...]
    source: str

    @property
    def text(self) -> str:
        """The concatenated test text the sliding-window perplexity runs over."""
        return "".join(page.text for page in self.pages)


@dataclasses.dataclass(frozen=True)
class HellaSwagItem:
    """A HellaSwag task as lm-eval scores it: ``query`` is ``activity_label + ": " + context``."""

    idx: int
    query: str
    endings: tuple[str, ...]
    label: int

    def __post_init__(self) -> None:
        if not 0 <= self.label < len(self.endings):
            raise ValueError(f"HellaSwagItem {self.idx}: label {self.label} is not an index into {len(self.endings)} endings")


@dataclasses.dataclass(frozen=True)
class BoolQItem:
    """A BoolQ question; ``label`` is 1 for yes (true) and 0 for no (false)."""

    idx: int
    passage: str
    question: str
    label: int

    def __post_init__(self) -> None:
        if self.label not in (0, 1):
            raise ValueError(f"BoolQItem {self.idx}: label must be 0 (no) or 1 (yes), got {self.label!r}")


# -- subsets ---------------------------------------------------------------------------------------------------
def select_subset(items: Sequence[T], limit: int | None, seed: int = 1234) -> list[T]:
    """A fixed, seeded subset of ``limit`` items, kept in their original order (all items when ``limit`` is None
    or not smaller than the data). The same (items, limit, seed) always gives the same subset."""
    if limit is None or limit >= len(items):
        return list(items)
    if limit <= 0:
        raise ValueError(f"limit must be a positive number of examples, got {limit}")
    chosen = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in chosen]


@dataclasses.dataclass(frozen=True)
class WikiTextSlice:
    """The WikiText text one evaluation scores: whole pages, the last one possibly cut at a line boundary."""

    pages: tuple[str, ...]
    page_indices: tuple[int, ...]
    truncated: bool
    source: str

    @property
    def text(self) -> str:
        return "".join(self.pages)


def slice_wikitext(corpus: "WikiTextCorpus", *, pages: int | None, max_tokens: int | None, seed: int,
                   count_tokens: Callable[[str], int]) -> WikiTextSlice:
    """Pages drawn in a seeded order (``pages`` of them; all when None), taken whole until ``max_tokens`` tokens;
    the page crossing the cap keeps its lines up to the cap (at least its first line). Without ``max_tokens`` the
    pages keep their original order."""
    indices = list(range(len(corpus.pages)))
    if max_tokens is None:
        chosen = select_subset(indices, pages, seed)
    else:
        random.Random(seed).shuffle(indices)
        chosen = indices[:pages] if pages is not None else indices
    taken: list[str] = []
    taken_idx: list[int] = []
    used = 0
    truncated = False
    for i in chosen:
        text = corpus.pages[i].text
        n = count_tokens(text)
        if max_tokens is None or used + n <= max_tokens:
            taken.append(text)
            taken_idx.append(i)
            used += n
            continue
        lines = text.splitlines(keepends=True)
        keep = 1
        while keep < len(lines) and used + count_tokens("".join(lines[: keep + 1])) <= max_tokens:
            keep += 1
        if used == 0 or used + count_tokens("".join(lines[:keep])) <= max_tokens:
            taken.append("".join(lines[:keep]))
            taken_idx.append(i)
            truncated = True
        break
    return WikiTextSlice(tuple(taken), tuple(taken_idx), truncated, corpus.source)


# -- WikiText ----------------------------------------------------------------------------------------------------
def is_title_line(line: str) -> bool:
    """True for an article title line (`` = Title = ``), false for section headings (`` = = Heading = = ``)."""
    return bool(_TITLE.match(line.rstrip("\n")))


def wikitext_pages(lines: Iterable[str], where: str = "<wikitext>") -> list[WikiTextPage]:
    """Group raw WikiText lines (each ending in ``\\n``) into articles, each starting at its title line.

    Blank lines are kept where the source has them (the hub split does; the shared copy has none). Without blank
    lines, two formula fragments in the "Constant k filter" article look exactly like titles, so the shared copy
    yields 62 pages for its 60 articles; the split only moves where rolling windows restart.
    """
    pages: list[list[str]] = []
    titles: list[str] = []
    for lineno, line in enumerate(lines, start=1):
        if is_title_line(line):
            pages.append([])
            titles.append(line.strip().strip("=").strip())
        elif not pages:
            if not line.strip():
                continue
            raise DataFormatError(
                f"{where}:{lineno}: expected the first article's title line ' = Title = ', got {line[:60]!r}; "
                "is this the WikiText-2 raw test file?"
            )
        pages[-1].append(line)
    if not pages:
        raise DataFormatError(f"{where}: no article title line (' = Title = ') found; is this the WikiText-2 raw test file?")
    return [WikiTextPage(i, title, "".join(body)) for i, (title, body) in enumerate(zip(titles, pages))]


def read_wikitext_file(path: str | os.PathLike[str]) -> WikiTextCorpus:
    """Read a ``wiki.test.raw`` copy (LF or CRLF endings) into pages."""
    path = Path(path)
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(f"{path}:{line}: not UTF-8 ({exc.reason}); the WikiText raw file must be UTF-8") from None
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise DataFormatError(f"{path}:{line}: a lone carriage return; line endings must be LF or CRLF")
    return WikiTextCorpus(tuple(wikitext_pages(text.splitlines(keepends=True), str(path))), source=str(path))


def wikitext_from_rows(rows: Iterable[str], source: str) -> WikiTextCorpus:
    """Pages from the hub's line rows (``{"text": " = Title = \\n"}``, blank rows included)."""
    return WikiTextCorpus(tuple(wikitext_pages(rows, source)), source=source)


# -- JSON lines ----------------------------------------------------------------------------------------------------
def read_jsonl(path: str | os.PathLike[str], fields: Sequence[str], parse: Callable[[dict[str, Any], str], T]) -> list[T]:
    """Parse a JSON-lines file whose objects have exactly ``fields``; ``parse(obj, where)`` builds a record."""
    path = Path(path)
    raw = _read_bytes(path)
    records: list[T] = []
    expected = set(fields)
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{lineno}"
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.reason
            raise DataFormatError(f"{where}: not valid JSON ({reason}); each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise DataFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        missing, extra = expected - obj.keys(), obj.keys() - expected
        if missing or extra:
            parts = [f"missing {sorted(missing)}" if missing else "", f"unexpected {sorted(extra)}" if extra else ""]
            raise DataFormatError(f"{where}: wrong fields ({'; '.join(p for p in parts if p)}); expected exactly {sorted(expected)}")
        try:
            records.append(parse(obj, where))
        except (TypeError, ValueError) as exc:
            if isinstance(exc, DataFormatError):
                raise
            raise DataFormatError(f"{where}: {exc}") from None
    if not records:
        raise DataFormatError(f"{path}: no records found")
    return records


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"field {field!r} must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"field {field!r} must be an integer, got {value!r}") from None


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"field {field!r} must be a string, got {type(value).__name__}")
    return value


def _bool_label(value: Any) -> int:
    """BoolQ labels: JSON booleans (SuperGLUE), 0/1 (hub), or the strings "true"/"false" (the shared copy)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return int(value.strip().lower() == "true")
    raise ValueError(f"field 'label' must be true/false (bool, 0/1 or the strings \"true\"/\"false\"), got {value!r}")


def _hellaswag_shared(obj: dict[str, Any], where: str) -> HellaSwagItem:
    endings = obj["endings"]
    if not isinstance(endings, list) or len(endings) != 4 or not all(isinstance(e, str) for e in endings):
        raise ValueError("field 'endings' must be a list of 4 strings")
    label = _int(obj["label"], "label")
    if not 0 <= label < 4:
        raise ValueError(f"field 'label' must be 0..3, got {label}")
    query = f"{_str(obj['activity_label'], 'activity_label')}: {_str(obj['ctx'], 'ctx')}"
    return HellaSwagItem(_int(obj["idx"], "idx"), query, tuple(endings), label)


def _boolq(obj: dict[str, Any], where: str) -> BoolQItem:
    return BoolQItem(_int(obj["idx"], "idx"), _str(obj["passage"], "passage"), _str(obj["question"], "question"),
                     _bool_label(obj["label"]))


def read_hellaswag_file(path: str | os.PathLike[str]) -> list[HellaSwagItem]:
    """The shared ``hellaswag/validation.jsonl`` (context already combined and cleaned upstream)."""
    return read_jsonl(path, ("idx", "activity_label", "ctx", "label", "endings"), _hellaswag_shared)


def read_boolq_file(path: str | os.PathLike[str]) -> list[BoolQItem]:
    """A SuperGLUE-layout BoolQ ``validation.jsonl`` (``question``, ``passage``, ``idx``, ``label``)."""
    return read_jsonl(path, ("question", "passage", "idx", "label"), _boolq)


# -- lm-eval's HellaSwag preprocessing, for hub records ------------------------------------------------------------
def hellaswag_preprocess(text: str) -> str:
    """lm-eval's HellaSwag text cleanup: strip, `` [title]`` → ``". "``, drop every ``[...]`` tag, collapse double
    spaces (once, as lm-eval does)."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def hellaswag_from_hub_row(row: dict[str, Any], idx: int) -> HellaSwagItem:
    """Build the item as lm-eval does: ``activity_label: ctx_a + " " + ctx_b.capitalize()``, then cleanup."""
    ctx = row["ctx_a"] + " " + row["ctx_b"].capitalize()
    return HellaSwagItem(idx, hellaswag_preprocess(row["activity_label"] + ": " + ctx),
                         tuple(hellaswag_preprocess(e) for e in row["endings"]), int(row["label"]))


# -- resolution ------------------------------------------------------------------------------------------------------
def hub_cached(repo_id: str) -> bool:
    """True when the hub dataset has files in the local Hugging Face caches (checked without any network call)."""
    roots = []
    try:
        from huggingface_hub import constants

        roots.append(Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}")
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers/datasets
        pass
    try:
        import datasets.config

        roots.append(Path(datasets.config.HF_DATASETS_CACHE) / repo_id.replace("/", "___"))
    except ImportError:  # pragma: no cover
        pass
    return any(root.is_dir() for root in roots)


def _load_hub(task: str) -> Any:
    repo, name, split = HUB_DATASETS[task]
    import datasets

    return datasets.load_dataset(repo, name, split=split)


def load_wikitext(data_dir: str | os.PathLike[str] | None = None) -> WikiTextCorpus:
    path = _data_path("wikitext", data_dir)
    if path is not None:
        return read_wikitext_file(path)
    rows = _load_hub("wikitext")
    return wikitext_from_rows((row["text"] for row in rows), source=f"hub:{HUB_DATASETS['wikitext'][0]}")


def load_hellaswag(data_dir: str | os.PathLike[str] | None = None) -> list[HellaSwagItem]:
    path = _data_path("hellaswag", data_dir)
    if path is not None:
        return read_hellaswag_file(path)
    return [hellaswag_from_hub_row(row, i) for i, row in enumerate(_load_hub("hellaswag"))]


def load_boolq(data_dir: str | os.PathLike[str] | None = None) -> list[BoolQItem]:
    path = _data_path("boolq", data_dir)
    if path is not None:
        return read_boolq_file(path)
    return [_boolq({"idx": row["idx"], "passage": row["passage"], "question": row["question"], "label": row["label"]}, "hub")
            for row in _load_hub("boolq")]


LOADERS: dict[str, Callable[..., Any]] = {"wikitext": load_wikitext, "hellaswag": load_hellaswag, "boolq": load_boolq}


def load_task(task: str, data_dir: str | os.PathLike[str] | None = None) -> Any:
    """The records of ``task`` ('wikitext', 'hellaswag' or 'boolq'): a :class:`WikiTextCorpus` or a list of items."""
    if task not in LOADERS:
        raise ValueError(f"unknown task {task!r}; use one of {', '.join(TASKS)}")
    return LOADERS[task](data_dir)


def data_source(task: str, data_dir: str | os.PathLike[str] | None) -> str:
    """Where ``task``'s data would come from, or raise :class:`DataUnavailable` naming the flag to set."""
    path = _data_path(task, data_dir)
    return str(path) if path is not None else f"hub:{HUB_DATASETS[task][0]}"


#: How the offline copies differ from what lm-eval reads, recorded next to the numbers computed from them.
SHARED_COPY_NOTES = {
    "wikitext": "offline copy: CRLF line endings and no blank lines (not the canonical byte sequence); 62 pages for "
                "60 articles; perplexities differ slightly from published lm-eval numbers",
    "hellaswag": "offline copy: ctx combined and tag-cleaned upstream (ctx_b not capitalized, llama.cpp cleanup), "
                 "not lm-eval's preprocessing of ctx_a/ctx_b; accuracies differ slightly from lm-eval's hellaswag",
    "boolq": "offline copy: SuperGLUE layout with string labels (mapped true -> yes, false -> no); same text as lm-eval",
}


def source_note(task: str, source: str) -> str:
    """What to know about ``task``'s numbers given where the data came from (``data_source``)."""
    if source.startswith("hub:"):
        return f"{source}: read as lm-eval reads it"
    return SHARED_COPY_NOTES[task]


def _data_path(task: str, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The file in ``data_dir`` for ``task``; None when the hub cache has it; else :class:`DataUnavailable`."""
    if data_dir:
        path = Path(data_dir) / DATA_FILES[task]
        if not path.is_file():
            raise DataUnavailable(f"{task}: {path} not found; --genai-data-dir must point at a folder laid out like "
                                  f"shared/data (expected {DATA_FILES[task]} inside it)")
        return path
    if hub_cached(HUB_DATASETS[task][0]):
        return None
    raise DataUnavailable(f"{task}: no local data (hub dataset {HUB_DATASETS[task][0]} is not cached); {DATA_FLAG_HINT}")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataUnavailable(f"{path} not found; {DATA_FLAG_HINT}") from None
