"""Evaluation data: WikiText-2 raw (test), HellaSwag (validation), BoolQ (validation).

Where each task's data comes from (its ``data_origin``), tried in this order by :func:`resolve_origin`:

1. ``data_dir`` (``--genai-data-dir``, ``GENAI_DATA_DIR`` or ini): the folder's file for the task, in the layout
   of ``shared/data`` (what ``pytest-genai data fetch DIR`` writes)::

       wikitext-2-raw-v1/test.raw    LF or CRLF line endings (the shared copy: CRLF, blank lines removed)
       hellaswag/validation.jsonl    {"idx", "activity_label", "ctx", "label", "endings"}; ctx already cleaned
       boolq/validation.jsonl        SuperGLUE layout, ``label`` true/false (bool, 0/1 or the strings)

   A folder that is given but does not exist is an error (:class:`DataDirMissing`), never a fallback; a folder
   that lacks one task's file falls through to 2 and 3 for that task.
2. ``hf_cache``: the Hugging Face hub names lm-evaluation-harness uses, via ``datasets.load_dataset``, when the
   dataset is already in the local cache.
3. ``embedded``: the evaluation slice shipped in ``embedded/`` (whole WikiText pages, the HellaSwag and BoolQ
   examples the ``tiny`` scale selects, cut byte for byte from the shared copies; see its ``manifest.json`` and
   ``ATTRIBUTION.md``). It serves a budget only when every example that budget selects from the full split is in
   the slice, so its numbers are the full data's numbers; otherwise the task is unavailable.

Nothing is downloaded at run time; :class:`DataUnavailable` names the command that fetches the data.

Parse errors name the file and the 1-based line. Records are small frozen dataclasses; ``select_subset`` draws the
fixed, seeded subset that ``--genai-limit`` asks for. ``data_identity`` says where a selection came from and its
sha256, without any local path.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

#: where a task's data came from, in the order they are tried
ORIGINS = ("data_dir", "hf_cache", "embedded")

#: the evaluation slice shipped with the package (same layout as a data dir, plus manifest.json)
EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"
MANIFEST = "manifest.json"

FETCH_COMMAND = "pytest-genai data fetch ./genai-data"
DATA_FLAG_HINT = (f"run `{FETCH_COMMAND}` (downloads the full splits; needs network) and pass "
                  "--genai-data-dir ./genai-data (or set GENAI_DATA_DIR)")

# A WikiText article title is " = Title = "; section headings are " = = Heading = = " and deeper.
_TITLE = re.compile(r"^ = (?!=).*[^=] = $")


class DataUnavailable(LookupError):
    """No origin serves the task at this budget: not in the data dir, not in the local Hugging Face cache, and not
    (entirely) in the embedded slice. Benchmarks skip with this message, which names the command to run."""


class DataDirMissing(FileNotFoundError):
    """A data dir was given but is not a folder: an error, never a reason to skip or fall back."""


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
    """WikiText pages; each page's ``index`` is its position in the split. ``population``: how many pages the split
    has when this corpus holds only some of them (the embedded slice); None when it holds them all."""

    pages: tuple[WikiTextPage, ...]
    source: str
    population: int | None = None

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
@dataclasses.dataclass(frozen=True)
class Cut(Sequence):
    """Records cut out of a larger split: ``items[k]`` is record ``positions[k]`` of a split of ``population``
    records (the embedded slice). Selecting from a cut selects from the whole split: the same records as the full
    data, or :class:`DataUnavailable` when the selection needs a record the cut does not hold."""

    items: tuple
    positions: tuple[int, ...]
    population: int
    source: str

    def __post_init__(self) -> None:
        if len(self.items) != len(self.positions):
            raise ValueError(f"Cut: {len(self.items)} items but {len(self.positions)} positions")
        if any(not 0 <= p < self.population for p in self.positions):
            raise ValueError(f"Cut: positions must lie in 0..{self.population - 1}")

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k):  # type: ignore[override]
        return self.items[k]

    def select(self, limit: int | None, seed: int) -> list:
        chosen = _chosen_positions(self.population, limit, seed)
        where = dict(zip(self.positions, self.items))
        missing = [p for p in chosen if p not in where]
        if missing:
            raise DataUnavailable(
                f"{self.source}: this selection ({'all' if limit is None else limit} examples, seed {seed}) needs "
                f"{len(missing)} of the split's {self.population} examples that the slice does not hold (it holds "
                f"{len(self.items)}); {DATA_FLAG_HINT}")
        return [where[p] for p in chosen]


def _chosen_positions(population: int, limit: int | None, seed: int) -> list[int]:
    if limit is None or limit >= population:
        return list(range(population))
    if limit <= 0:
        raise ValueError(f"limit must be a positive number of examples, got {limit}")
    return sorted(random.Random(seed).sample(range(population), limit))


def select_subset(items: Sequence[T], limit: int | None, seed: int = 1234) -> list[T]:
    """A fixed, seeded subset of ``limit`` items, kept in their original order (all items when ``limit`` is None
    or not smaller than the data). The same (items, limit, seed) always gives the same subset. On a :class:`Cut`
    the subset is drawn from the whole split it was cut from (:meth:`Cut.select`)."""
    if isinstance(items, Cut):
        return items.select(limit, seed)
    return [items[i] for i in _chosen_positions(len(items), limit, seed)]


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


def _head(text: str, limit: int, count_tokens: Callable[[str], int]) -> str:
    """``text``'s first whole lines that fit in ``limit`` tokens (at least its first line)."""
    lines = text.splitlines(keepends=True)
    keep = 1
    while keep < len(lines) and count_tokens("".join(lines[: keep + 1])) <= limit:
        keep += 1
    return "".join(lines[:keep])


def slice_wikitext(corpus: "WikiTextCorpus", *, pages: int | None, max_tokens: int | None, seed: int,
                   count_tokens: Callable[[str], int], page_tokens: int | None = None) -> WikiTextSlice:
    """Pages drawn in a seeded order (``pages`` of them; all when None), taken whole until ``max_tokens`` tokens;
    the page crossing the cap keeps its lines up to the cap (at least its first line). ``page_tokens``: each page
    first keeps only its opening lines up to that many tokens, so a small budget spans several articles instead of
    the start of one. Without ``max_tokens`` the pages keep their original order.

    The order is drawn over the whole split (``corpus.population`` pages when the corpus holds only some), so a
    slice of the split selects what the full split selects, or raises :class:`DataUnavailable` when it needs a page
    the slice does not hold."""
    population = corpus.population if corpus.population is not None else len(corpus.pages)
    by_index = {page.index: page for page in corpus.pages}
    indices = list(range(population))
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
        if i not in by_index:
            raise DataUnavailable(
                f"wikitext: this selection (pages {'all' if pages is None else pages}, "
                f"{'no token cap' if max_tokens is None else f'{max_tokens} tokens'}, seed {seed}) needs page {i} of "
                f"the split's {population}, which {corpus.source} does not hold; {DATA_FLAG_HINT}")
        text = by_index[i].text
        if page_tokens is not None and count_tokens(text) > page_tokens:
            text, truncated = _head(text, page_tokens, count_tokens), True
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
    """Read a ``wiki.test.raw`` copy (LF or CRLF endings, a UTF-8 byte-order mark or none) into pages."""
    path = Path(path)
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(f"{path}:{line}: not UTF-8 ({exc.reason}); the WikiText raw file must be UTF-8") from None
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise DataFormatError(f"{path}:{line}: a lone carriage return; line endings must be LF or CRLF")
    return WikiTextCorpus(tuple(wikitext_pages(text.splitlines(keepends=True), str(path))), source=str(path))


def raw_wikitext_lines(rows: Iterable[str]) -> Iterator[str]:
    """The raw file's lines from the hub's rows: its loader yields ``""`` for each blank line, which in
    ``wiki.test.raw`` is ``" \\n"`` (lm-eval's document-level pages keep those lines); every other row is its line."""
    for row in rows:
        yield row if row else " \n"


def wikitext_from_rows(rows: Iterable[str], source: str) -> WikiTextCorpus:
    """Pages from the hub's line rows (``{"text": " = Title = \\n"}``, blank rows restored as the file's ``" \\n"``)."""
    return WikiTextCorpus(tuple(wikitext_pages(raw_wikitext_lines(rows), source)), source=source)


# -- JSON lines ----------------------------------------------------------------------------------------------------
def read_jsonl(path: str | os.PathLike[str], fields: Sequence[str], parse: Callable[[dict[str, Any], str], T]) -> list[T]:
    """Parse a JSON-lines file whose objects have exactly ``fields``; ``parse(obj, where)`` builds a record."""
    path = Path(path)
    raw = _read_bytes(path).removeprefix(b"\xef\xbb\xbf")  # a byte-order mark (a Windows editor's save)
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


# -- the tasks: what differs between them, looked up once by name ----------------------------------------------------
def _place_pages(corpus: WikiTextCorpus, entry: dict[str, Any], source: str) -> WikiTextCorpus:
    positions = entry["positions"]
    if len(corpus.pages) != len(positions):
        raise DataFormatError(f"{corpus.source}: {len(corpus.pages)} pages but the manifest places {len(positions)}")
    pages = tuple(dataclasses.replace(page, index=pos) for page, pos in zip(corpus.pages, positions))
    return WikiTextCorpus(pages, source, population=entry["population"])


def _place_items(items: Sequence[Any], entry: dict[str, Any], source: str) -> Cut:
    return Cut(tuple(items), tuple(item.idx for item in items), entry["population"], source)


def _pages_gap(entry: dict[str, Any], budget: Any, name: str) -> str:
    """WikiText: a token cap within the slice's, its seed, and (``wikitext_page_tokens``) every drawn page held."""
    cap = entry["selection"]["wikitext_tokens"]
    if budget.wikitext_tokens is None or budget.wikitext_tokens > cap:
        tokens = "all" if budget.wikitext_tokens is None else f"{budget.wikitext_tokens:,}"
        return f"the embedded slice covers WikiText slices of up to {cap:,} tokens (the 'tiny' scale), not {tokens}"
    if budget.seed != entry["selection"]["seed"]:
        return f"the embedded slice was cut for seed {entry['selection']['seed']}, not {budget.seed}"
    if getattr(budget, "wikitext_page_tokens", None) is not None:
        # every page the budget draws is read (its opening lines): all must be among the pages the slice holds
        order = list(range(entry["population"]))
        random.Random(budget.seed).shuffle(order)
        held = set(entry["positions"])
        leading = next((k for k, i in enumerate(order) if i not in held), len(order))
        if budget.wikitext_pages is None or budget.wikitext_pages > leading:
            pages = "all" if budget.wikitext_pages is None else budget.wikitext_pages
            return (f"the embedded slice holds the first {leading} pages of the seeded order (the 'tiny' scale "
                    f"and --genai-limit up to {leading}), not {pages}")
    return ""


def _examples_gap(entry: dict[str, Any], budget: Any, name: str) -> str:
    """HellaSwag / BoolQ: every example the budget selects from the full split must be in the slice."""
    chosen = _chosen_positions(entry["population"], budget.examples(name), budget.seed)
    held = set(entry["positions"])
    if any(p not in held for p in chosen):
        return (f"the embedded slice holds {len(held)} of the {entry['population']:,} examples, not the "
                f"{len(chosen):,} (seed {budget.seed}) this budget selects (the 'tiny' scale and --genai-limit up to "
                f"{len(held)} fit)")
    return ""


def _select_pages(corpus: WikiTextCorpus, budget: Any, name: str, count_tokens: Callable[[str], int]) -> WikiTextSlice:
    return slice_wikitext(corpus, pages=budget.wikitext_pages, max_tokens=budget.wikitext_tokens, seed=budget.seed,
                          count_tokens=count_tokens, page_tokens=budget.wikitext_page_tokens)


def _select_items(items: Sequence[T], budget: Any, name: str, count_tokens: Any) -> list[T]:
    return select_subset(items, budget.examples(name), budget.seed)


@dataclasses.dataclass(frozen=True)
class EvalTask:
    """One task's data: its ``file`` in a data dir (and ``embedded/``), its ``hub`` (id, config, split) as lm-eval names
    it, its ``dataset`` (name, split) in ``data_identity``, how each origin's records are read, and its notes; how a
    budget selects from them, what a selection counts, and how the runner scores it."""

    name: str
    file: str
    hub: tuple[str, str | None, str]
    dataset: tuple[str, str]
    read_file: Callable[[Path], Any]
    from_hub: Callable[[Any, str], Any]  # (hub rows, source) -> records
    shared_note: str
    hub_note: str = "read as lm-eval reads it"
    place: Callable[[Any, dict[str, Any], str], Any] = _place_items  # (records, manifest entry, source)
    gap: Callable[[dict[str, Any], Any, str], str] = _examples_gap  # (manifest entry, budget, name)
    select: Callable[[Any, Any, str, Any], Any] = _select_items  # (records, budget, name, count_tokens)
    unit: str = "examples"  # what ``count`` counts
    count: Callable[[Any], int] = len  # records or a selection -> how many units
    choices: str = ""  # its multiple-choice scorer in :mod:`~pytest_genai.evals.tasks`; '': sliding/rolling perplexity


#: the tasks by name; the notes say how the offline copies differ from what lm-eval reads
TASKS: dict[str, EvalTask] = {task.name: task for task in (
    EvalTask("wikitext", "wikitext-2-raw-v1/test.raw", ("Salesforce/wikitext", "wikitext-2-raw-v1", "test"),
             ("wikitext-2-raw-v1", "test"), read_wikitext_file,
             lambda rows, source: wikitext_from_rows((row["text"] for row in rows), source=source),
             "offline copy: CRLF line endings and no blank lines (not the canonical byte sequence); 62 pages for "
             "60 articles; perplexities differ slightly from published lm-eval numbers",
             "the raw test lines, blank ones restored (the hub's empty rows), split at article titles",
             _place_pages, _pages_gap, _select_pages, "pages", lambda records: len(records.pages)),
    EvalTask("hellaswag", "hellaswag/validation.jsonl", ("Rowan/hellaswag", None, "validation"),
             ("hellaswag", "validation"), read_hellaswag_file,
             lambda rows, source: [hellaswag_from_hub_row(row, i) for i, row in enumerate(rows)],
             "offline copy: ctx combined and tag-cleaned upstream (ctx_b not capitalized, llama.cpp cleanup), "
             "not lm-eval's preprocessing of ctx_a/ctx_b; accuracies differ slightly from lm-eval's hellaswag",
             choices="hellaswag"),
    EvalTask("boolq", "boolq/validation.jsonl", ("aps/super_glue", "boolq", "validation"),
             ("boolq", "validation"), read_boolq_file, lambda rows, source: [_boolq(row, source) for row in rows],
             "offline copy: SuperGLUE layout with string labels (mapped true -> yes, false -> no); same text as "
             "lm-eval", choices="boolq"),
)}

#: task -> its file inside ``--genai-data-dir``
DATA_FILES = {name: task.file for name, task in TASKS.items()}


def get_task(name: str) -> EvalTask:
    """The task called ``name``, or a one-line ValueError naming the valid ones."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; use one of {', '.join(TASKS)}")
    return TASKS[name]


# -- resolution ------------------------------------------------------------------------------------------------------
def hub_cached(repo_id: str, config: str | None = None) -> bool:
    """True when the hub dataset (its ``config``, when it names one) has files in the local Hugging Face caches
    (checked without any network call): a cache holding another config of the same repo (lm-eval's other super_glue
    tasks share BoolQ's repo) does not count."""
    found = []
    try:
        from huggingface_hub import constants

        hub = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}"
        # the repo's files by config folder (``<config>/validation-*.parquet``), or the whole repo without a config
        found.append(any(hub.glob(f"snapshots/*/{config}")) if config else hub.is_dir())
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers/datasets
        pass
    try:
        import datasets.config

        prepared = Path(datasets.config.HF_DATASETS_CACHE) / repo_id.replace("/", "___")
        found.append((prepared / config).is_dir() if config else prepared.is_dir())
    except ImportError:  # pragma: no cover
        pass
    return any(found)


def _load_hub(task: EvalTask) -> Any:
    repo, name, split = task.hub
    import datasets

    try:
        return datasets.load_dataset(repo, name, split=split)
    except (OSError, ValueError) as exc:  # ConnectionError, FileNotFoundError, DatasetNotFoundError, a missing split
        raise DataUnavailable(f"{task.name}: {repo} ({name or 'default'}, {split}) is in the Hugging Face cache but could "
                              f"not be read from it: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; "
                              f"{DATA_FLAG_HINT}") from exc


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where one task's data comes from: ``kind`` is one of :data:`ORIGINS`; ``path`` the local file read
    (None for the hub cache). The path is for reading only: it never goes into an identity or a report."""

    task: str
    kind: str
    path: Path | None = None


def resolve_origin(task: str, data_dir: str | os.PathLike[str] | None = None, budget: Any = None, *,
                   allow_embedded: bool = True) -> Origin:
    """Where ``task``'s data comes from: the data dir's file, else the local Hugging Face cache, else the embedded
    slice (when ``allow_embedded`` and, given a ``budget`` (an ``EvalBudget``), when the slice covers it).

    Raises :class:`DataDirMissing` for a ``data_dir`` that is not a folder and :class:`DataUnavailable`, naming the
    command that fetches the data, when nothing serves the task."""
    spec = get_task(task)
    lacks = ""
    if data_dir:
        root = Path(data_dir)
        if not root.is_dir():
            raise DataDirMissing(f"--genai-data-dir {root}: no such folder; give the folder `{FETCH_COMMAND}` wrote "
                                 "(or a copy laid out like shared/data), or leave it unset to use the embedded slice")
        path = root / spec.file
        if path.is_file():
            return Origin(task, "data_dir", path)
        lacks = f"the data dir has no {spec.file}, "
    repo, config, _ = spec.hub
    if hub_cached(repo, config):
        return Origin(task, "hf_cache")
    embedded = EMBEDDED_DIR / spec.file
    if not allow_embedded:
        why = "the embedded slice is not used here"
    elif not embedded.is_file():
        why = "this installation has no embedded slice"
    else:
        why = embedded_gap(task, budget) if budget is not None else ""
        if not why:
            return Origin(task, "embedded", embedded)
    raise DataUnavailable(f"{task}: no data: {lacks}{repo} is not in the Hugging Face cache, and {why}; "
                          f"{DATA_FLAG_HINT}")


def embedded_manifest() -> dict[str, Any]:
    """The embedded slice's ``manifest.json``: per file its sha256, where it was cut from, and the selection."""
    path = EMBEDDED_DIR / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataUnavailable(f"{path} not found: this installation has no embedded slice; {DATA_FLAG_HINT}") from None


def embedded_gap(task: str, budget: Any) -> str:
    """Why the embedded slice cannot serve ``budget`` for ``task`` ('' when it can): the task's ``gap``."""
    spec = get_task(task)
    return spec.gap(embedded_manifest()["files"][spec.file], budget, spec.name)


def load_origin(origin: Origin) -> Any:
    """The records at ``origin``: a :class:`WikiTextCorpus`, a list of items, or (embedded) a :class:`Cut`."""
    task = get_task(origin.task)
    if origin.kind == "data_dir":
        return task.read_file(origin.path)
    if origin.kind == "hf_cache":
        return task.from_hub(_load_hub(task), f"hub:{task.hub[0]}")
    # the embedded file, checked against the manifest's sha256, each record at its place in the split
    path = EMBEDDED_DIR / task.file
    entry = embedded_manifest()["files"][task.file]
    digest = sha256_file(path)
    if digest != entry["sha256"]:
        raise DataFormatError(f"{path}: sha256 {digest} differs from the manifest's {entry['sha256']}; the embedded "
                              "slice was changed: regenerate it with scripts/make_embedded_slice.py")
    return task.place(task.read_file(path), entry, f"embedded:{task.file}")


def load_wikitext(data_dir: str | os.PathLike[str] | None = None) -> WikiTextCorpus:
    return load_origin(resolve_origin("wikitext", data_dir))


def load_hellaswag(data_dir: str | os.PathLike[str] | None = None) -> Sequence[HellaSwagItem]:
    return load_origin(resolve_origin("hellaswag", data_dir))


def load_boolq(data_dir: str | os.PathLike[str] | None = None) -> Sequence[BoolQItem]:
    return load_origin(resolve_origin("boolq", data_dir))


def load_task(task: str, data_dir: str | os.PathLike[str] | None = None) -> Any:
    """The records of ``task`` ('wikitext', 'hellaswag' or 'boolq'): a :class:`WikiTextCorpus` or a sequence of
    items, from the first origin that has them (:func:`resolve_origin`)."""
    return load_origin(resolve_origin(task, data_dir))


def data_source(task: str, data_dir: str | os.PathLike[str] | None, budget: Any = None) -> str:
    """Where ``task``'s data would come from: the data dir file's path, ``hub:<id>`` or ``embedded:<file>``; raises
    :class:`DataUnavailable` naming the command to run (given a ``budget``, also when the embedded slice does not
    cover it). The path is machine-local: configs and reports take :func:`data_identity` instead."""
    origin = resolve_origin(task, data_dir, budget)
    if origin.kind == "data_dir":
        return str(origin.path)
    if origin.kind == "embedded":
        return f"embedded:{get_task(task).file}"
    return f"hub:{get_task(task).hub[0]}"


def data_identity(task: str, data_dir: str | os.PathLike[str] | None = None, examples: Any = None) -> dict[str, str]:
    """What was evaluated, without any local path: ``data_origin`` (one of :data:`ORIGINS`), ``dataset``,
    ``split`` and ``sha256``: of ``examples`` (the evaluated selection: a :class:`WikiTextSlice` or the selected
    items) when given, else of all the records the origin holds (:func:`records_sha256`). The same examples give
    the same sha256 whatever their origin (the embedded slice's tiny selection equals the shared copy's)."""
    origin = resolve_origin(task, data_dir)
    dataset, split = get_task(task).dataset
    records = examples if examples is not None else load_origin(origin)
    return {"data_origin": origin.kind, "dataset": dataset, "split": split, "sha256": records_sha256(records)}


def records_sha256(records: Any) -> str:
    """sha256 of evaluation records in a canonical form: one JSON object per line (sorted keys, UTF-8) -- for
    WikiText ``{"page": index, "text": ...}`` per page (a cut page's text as evaluated), for items their fields."""
    if isinstance(records, (WikiTextSlice, WikiTextCorpus)):
        if isinstance(records, WikiTextSlice):
            rows = [{"page": i, "text": t} for i, t in zip(records.page_indices, records.pages)]
        else:
            rows = [{"page": page.index, "text": page.text} for page in records.pages]
    else:
        rows = [dataclasses.asdict(item) for item in records]
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wikitext_raw_file(data_dir: str | os.PathLike[str] | None, workdir: str | os.PathLike[str], *,
                      allow_embedded: bool = True) -> tuple[Path, dict[str, str]]:
    """A WikiText-2 raw test file for training code that reads text from a path, and its :func:`data_identity`:
    the data dir's file, else the hub cache's rows written to ``workdir/wikitext-2-raw-test.raw``, else the
    embedded slice's file (when ``allow_embedded``). Raises like :func:`resolve_origin`."""
    origin = resolve_origin("wikitext", data_dir, allow_embedded=allow_embedded)
    dataset, split = TASKS["wikitext"].dataset
    if origin.kind == "hf_cache":
        text = "".join(raw_wikitext_lines(row["text"] for row in _load_hub(TASKS["wikitext"])))
        path = Path(workdir) / "wikitext-2-raw-test.raw"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    else:
        path = origin.path
    return path, {"data_origin": origin.kind, "dataset": dataset, "split": split, "sha256": sha256_file(path)}


def source_note(task: str, source: str) -> str:
    """What to know about ``task``'s numbers given where the data came from (``data_source``)."""
    spec = get_task(task)
    if source.startswith("hub:"):
        return f"{source}: {spec.hub_note}"
    if source.startswith("embedded:"):
        return ("embedded slice (the tiny selection, cut byte for byte from the offline copy; same examples as the "
                "full copy at this budget); " + spec.shared_note)
    fetched = _fetched_from(Path(source))
    if fetched:
        return f"fetched from hub:{fetched} by `pytest-genai data fetch`: read as lm-eval reads it"
    return spec.shared_note


def _fetched_from(path: Path) -> str:
    """The hub id a data dir file was fetched from, when ``pytest-genai data fetch`` wrote its folder."""
    try:
        manifest = json.loads((path.parent.parent / MANIFEST).read_text(encoding="utf-8"))
        rel = path.relative_to(path.parent.parent).as_posix()
        return str(manifest["files"][rel]["hub"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataUnavailable(f"{path} not found; {DATA_FLAG_HINT}") from None
