import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals import data
from pytest_genai.evals.data import DataFormatError, DataUnavailable


# -- the shared copies -------------------------------------------------------------------------------------------
def test_shared_hellaswag_parses_to_10042_tasks(shared_data_dir):
    items = data.load_hellaswag(shared_data_dir)
    assert len(items) == 10_042
    assert items[0].query == "Roof shingle removal: A man is sitting on a roof. he"
    assert items[0].label == 3 and items[0].endings[3] == "starts pulling up roofing on a roof."
    assert [sum(i.label == k for i in items) for k in range(4)] == [2515, 2485, 2584, 2458]


def test_shared_boolq_parses_to_3270_questions_with_string_labels_mapped(shared_data_dir):
    items = data.load_boolq(shared_data_dir)
    assert len(items) == 3_270
    assert (items[0].label, items[1].label) == (0, 1)  # "false" -> no, "true" -> yes
    assert sum(i.label for i in items) == 2_033
    assert items[0].question == "does ethanol take more energy make that produces"


def test_shared_wikitext_crlf_file_splits_into_pages(shared_data_dir):
    corpus = data.load_wikitext(shared_data_dir)
    # 60 articles; two formula fragments in "Constant k filter" look exactly like titles without blank lines
    assert len(corpus.pages) == 62
    assert corpus.pages[0].title == "Robert Boulter" and corpus.pages[-1].title == "The Hustler ( film )"
    assert "\r" not in corpus.text
    assert corpus.text.count("\n") == 2_891
    assert corpus.pages[0].text.startswith(" = Robert Boulter = \n Robert Boulter is an English film")


# -- parsing errors name file and line ---------------------------------------------------------------------------
def _write(tmp_path, rel, lines):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD_HS = {"idx": 0, "activity_label": "A", "ctx": "b c", "label": 1, "endings": ["w", "x", "y", "z"]}
GOOD_BQ = {"question": "is it", "passage": "T -- p", "idx": 0, "label": "true"}


def test_corrupt_jsonl_line_names_file_and_line(tmp_path):
    path = _write(tmp_path, "boolq/validation.jsonl", [json.dumps(GOOD_BQ), '{"question": "x", broken'])
    with pytest.raises(DataFormatError, match=rf"{path}:2: not valid JSON"):
        data.read_boolq_file(path)


def test_wrong_field_names_name_file_line_and_fields(tmp_path):
    bad = dict(GOOD_HS)
    bad["context"] = bad.pop("ctx")
    path = _write(tmp_path, "hellaswag/validation.jsonl", [json.dumps(GOOD_HS), json.dumps(GOOD_HS), json.dumps(bad)])
    with pytest.raises(DataFormatError, match=rf"{path}:3: wrong fields \(missing \['ctx'\]; unexpected \['context'\]\)"):
        data.read_hellaswag_file(path)


@pytest.mark.parametrize("field, value, match", [
    ("label", "maybe", "label"), ("label", 7, "label"), ("endings", ["a"], "endings"), ("idx", 1.5, "idx"),
])
def test_bad_values_name_the_field(tmp_path, field, value, match):
    record = dict(GOOD_HS, **{field: value})
    path = _write(tmp_path, "h.jsonl", [json.dumps(record)])
    with pytest.raises(DataFormatError, match=rf"{path}:1: .*{match}"):
        data.read_hellaswag_file(path)


def test_boolq_label_forms(tmp_path):
    rows = [dict(GOOD_BQ, idx=i, label=v) for i, v in enumerate(["true", "false", True, False, 1, 0])]
    path = _write(tmp_path, "b.jsonl", [json.dumps(r) for r in rows])
    assert [i.label for i in data.read_boolq_file(path)] == [1, 0, 1, 0, 1, 0]
    path = _write(tmp_path, "c.jsonl", [json.dumps(dict(GOOD_BQ, label="yes"))])
    with pytest.raises(DataFormatError, match=r"c.jsonl:1: .*label"):
        data.read_boolq_file(path)


def test_wikitext_without_a_title_first_names_the_line(tmp_path):
    path = tmp_path / "test.raw"
    path.write_bytes(b" \r\n just text \r\n = Title = \r\n")
    with pytest.raises(DataFormatError, match=rf"{path}:2: expected the first article's title"):
        data.read_wikitext_file(path)


def test_wikitext_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "test.raw"
    path.write_bytes(b" = T = \n ok \n bad \xff byte \n")
    with pytest.raises(DataFormatError, match=rf"{path}:3: not UTF-8"):
        data.read_wikitext_file(path)


def test_wikitext_lf_and_crlf_give_the_same_pages(tmp_path):
    text = " = A = \n\n x @-@ y \n = = H = = \n z \n = B = \n w \n"
    lf, crlf = tmp_path / "lf.raw", tmp_path / "crlf.raw"
    lf.write_bytes(text.encode())
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    a, b = data.read_wikitext_file(lf), data.read_wikitext_file(crlf)
    assert [p.text for p in a.pages] == [p.text for p in b.pages] == [" = A = \n\n x @-@ y \n = = H = = \n z \n",
                                                                      " = B = \n w \n"]
    assert [p.title for p in a.pages] == ["A", "B"]


def test_a_byte_order_mark_is_read_past(tmp_path):
    """A copy saved by a Windows editor starts with a UTF-8 byte-order mark: the same pages and records as without
    (it was 'expected the first article's title line, got \\ufeff = A = ')."""
    text = " = A = \n x \n = B = \n w \n"
    plain, marked = tmp_path / "plain.raw", tmp_path / "bom.raw"
    plain.write_bytes(text.encode())
    marked.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert [p.text for p in data.read_wikitext_file(marked).pages] == \
        [p.text for p in data.read_wikitext_file(plain).pages]
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}\n{"a": 2}\n')
    assert data.read_jsonl(rows, ["a"], lambda obj, where: obj["a"]) == [1, 2]


def test_hub_rows_group_into_pages_with_the_blank_lines_the_hub_emptied():
    """The hub's loader yields "" for wiki.test.raw's blank " \\n" lines (lm-eval's pages keep them): restored, so
    the page bytes and the scored text are the raw file's (they lost 2 bytes per blank line before)."""
    rows = ["", " = A = \n", "", " x \n", " = = H = = \n", " = B = \n", " y \n"]
    corpus = data.wikitext_from_rows(rows, "hub:test")
    assert [p.text for p in corpus.pages] == [" = A = \n \n x \n = = H = = \n", " = B = \n y \n"]
    assert "".join(data.raw_wikitext_lines(rows)) == " \n = A = \n \n x \n = = H = = \n = B = \n y \n"


def test_hellaswag_hub_row_built_as_lm_eval_does():
    row = {"activity_label": "Baking", "ctx_a": "A man [title] mixes flour.", "ctx_b": "then he",
           "endings": ["[step] bakes it.", "eats  it."], "label": "0"}
    item = data.hellaswag_from_hub_row(row, 5)
    assert item.query == "Baking: A man. mixes flour. Then he"
    assert item.endings == (" bakes it.", "eats it.") and item.label == 0  # lm-eval strips before removing tags


def test_hellaswag_preprocess_equals_lm_eval():
    utils = pytest.importorskip("lm_eval.tasks.hellaswag.utils")
    for text in ["A [header] b [title] c  d", " x [step] y ", "plain"]:
        assert data.hellaswag_preprocess(text) == utils.preprocess(text)


# -- where data comes from: data dir -> Hugging Face cache -> embedded slice ------------------------------------------------
def _data_dir(tmp_path, tasks=data.TASKS):
    """A data dir with a few records per task (the shared layout: CRLF WikiText, string BoolQ labels)."""
    root = tmp_path / "data"
    if "wikitext" in tasks:
        path = root / data.DATA_FILES["wikitext"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b" = A = \r\n a line . \r\n = B = \r\n b line . \r\n")
    if "hellaswag" in tasks:
        _write(root, data.DATA_FILES["hellaswag"], [json.dumps(dict(GOOD_HS, idx=i)) for i in range(3)])
    if "boolq" in tasks:
        _write(root, data.DATA_FILES["boolq"], [json.dumps(dict(GOOD_BQ, idx=i)) for i in range(3)])
    root.mkdir(parents=True, exist_ok=True)
    return root


HUB_ROWS = {
    "wikitext": [{"text": ""}, {"text": " = Hub Page = \n"}, {"text": ""}, {"text": " hub text . \n"}],
    "hellaswag": [{"activity_label": "Baking", "ctx_a": "A man [title] mixes flour.", "ctx_b": "then he",
                   "endings": ["[step] bakes it.", "eats  it.", "c", "d"], "label": "1"}],
    "boolq": [{"question": "is it hub", "passage": "T -- p", "idx": 0, "label": 1}],
}


@pytest.fixture
def fake_hub(monkeypatch):
    """The Hugging Face cache path, offline: ``hub_cached`` says yes for the repos in ``cached`` and
    ``datasets.load_dataset`` returns a few rows (recording its calls)."""
    datasets = pytest.importorskip("datasets")
    cached, calls = set(), []

    def load_dataset(repo, name=None, split=None):
        calls.append((repo, name, split))
        task = next(t for t, spec in data.TASKS.items() if spec.hub[0] == repo)
        return list(HUB_ROWS[task])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(data, "hub_cached", lambda repo, config=None: repo in cached)
    return cached, calls


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr(data, "hub_cached", lambda repo, config=None: False)


def test_the_data_dir_comes_first(tmp_path, fake_hub):
    cached, calls = fake_hub
    cached.update(spec.hub[0] for spec in data.TASKS.values())
    root = _data_dir(tmp_path)
    for task in data.TASKS:
        origin = data.resolve_origin(task, root)
        assert (origin.kind, origin.path) == ("data_dir", root / data.DATA_FILES[task])
    assert [i.idx for i in data.load_hellaswag(root)] == [0, 1, 2] and not calls


def test_without_a_data_dir_the_hf_cache_comes_before_the_embedded_slice(fake_hub):
    cached, calls = fake_hub
    cached.update(spec.hub[0] for spec in data.TASKS.values())
    assert {data.resolve_origin(t, None).kind for t in data.TASKS} == {"hf_cache"}
    corpus = data.load_task("wikitext", None)
    assert [p.text for p in corpus.pages] == [" = Hub Page = \n \n hub text . \n"] and corpus.source == "hub:Salesforce/wikitext"
    item = data.load_task("hellaswag", None)[0]
    assert item.query == "Baking: A man. mixes flour. Then he" and item.label == 1  # lm-eval's preprocessing
    assert data.load_task("boolq", None)[0].label == 1
    assert calls == [spec.hub for spec in data.TASKS.values()]
    assert data.data_source("boolq", None) == "hub:aps/super_glue"


def test_without_a_data_dir_or_hf_cache_the_embedded_slice_serves(no_hub):
    for task in data.TASKS:
        origin = data.resolve_origin(task, None)
        assert origin.kind == "embedded" and origin.path == data.EMBEDDED_DIR / data.DATA_FILES[task]
        assert data.data_source(task, None) == f"embedded:{data.DATA_FILES[task]}"
    assert len(data.load_task("hellaswag", None)) == 40


def test_a_data_dir_lacking_a_task_falls_back_per_task(tmp_path, fake_hub):
    cached, _ = fake_hub
    root = _data_dir(tmp_path, tasks=("wikitext",))
    assert data.resolve_origin("wikitext", root).kind == "data_dir"
    assert data.resolve_origin("boolq", root).kind == "embedded"
    cached.add(data.TASKS["boolq"].hub[0])
    assert data.resolve_origin("boolq", root).kind == "hf_cache"


def test_a_missing_data_dir_is_an_error_not_a_fallback(tmp_path, no_hub):
    missing = tmp_path / "nope"
    with pytest.raises(data.DataDirMissing, match=rf"--genai-data-dir {missing}: no such folder"):
        data.resolve_origin("boolq", missing)
    assert not issubclass(data.DataDirMissing, DataUnavailable)  # benchmarks skip on DataUnavailable, never on this
    (tmp_path / "file").write_text("x")
    with pytest.raises(data.DataDirMissing):
        data.load_task("wikitext", tmp_path / "file")


@pytest.mark.parametrize("how", ["flag", "env", "ini"])
def test_a_missing_data_dir_is_a_usage_error_at_configure_time(pytester, monkeypatch, how):
    pytester.makepyfile("def test_x(genai_settings):\n    pass\n")  # a genai test: the environment applies to it
    missing = pytester.path / "no-such-data"
    args = []
    monkeypatch.delenv("GENAI_DATA_DIR", raising=False)
    if how == "flag":
        args = ["--genai-data-dir", str(missing)]
    elif how == "env":
        monkeypatch.setenv("GENAI_DATA_DIR", str(missing))
    else:
        pytester.makeini(f"[pytest]\ngenai_data_dir = {missing}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    where = {"flag": "command-line option --genai-data-dir", "env": "environment variable GENAI_DATA_DIR",
             "ini": "ini setting genai_data_dir"}[how]
    errors = [line for line in result.stderr.lines if "ERROR" in line]
    assert len(errors) == 1 and f"{where}: {missing}: no such folder" in errors[0]


def test_an_existing_data_dir_is_accepted_and_made_absolute(tmp_path, monkeypatch):
    from pytest_genai.plugin.options import parse_data_dir

    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    assert parse_data_dir("d") == str(tmp_path / "d")
    with pytest.raises(ValueError, match="no such folder"):
        parse_data_dir("e")


def test_embedded_slice_serves_only_the_budgets_it_covers(no_hub):
    from pytest_genai.evals.config import preset

    for limit in (None, 1, 3):
        budget, _ = preset("tiny", limit)
        assert {data.resolve_origin(t, None, budget).kind for t in data.TASKS} == {"embedded"}
    for limit in (17, 40):  # HellaSwag / BoolQ: the 40 examples it holds; WikiText: only 3 pages of the seeded order
        budget, _ = preset("tiny", limit)
        assert {data.resolve_origin(t, None, budget).kind for t in ("hellaswag", "boolq")} == {"embedded"}
        with pytest.raises(DataUnavailable, match="first 3 pages of the seeded order"):
            data.resolve_origin("wikitext", None, budget)
    for scale, limit, task in (("small", None, "wikitext"), ("small", None, "hellaswag"), ("full", None, "boolq"),
                               ("tiny", 41, "boolq"), ("small", 5, "wikitext"), ("tiny", 4, "wikitext")):
        budget, _ = preset(scale, limit)
        with pytest.raises(DataUnavailable, match=r"pytest-genai data fetch \./genai-data.*--genai-data-dir"):
            data.resolve_origin(task, None, budget)
    budget, _ = preset("tiny")
    with pytest.raises(DataUnavailable, match="cut for seed 1234, not 7"):
        data.resolve_origin("wikitext", None, dataclasses.replace(budget, seed=7))


def test_nothing_serves_names_the_fetch_command(no_hub):
    with pytest.raises(DataUnavailable, match=r"boolq: no data: .*not in the Hugging Face cache.*pytest-genai data fetch"):
        data.resolve_origin("boolq", None, allow_embedded=False)


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task 'mmlu'"):
        data.load_task("mmlu", None)


def test_registry_names_each_task_once_and_unknown_names_are_one_line_errors():
    assert list(data.TASKS) == ["wikitext", "hellaswag", "boolq"]
    assert all(data.get_task(name).name == name for name in data.TASKS)
    for call in (lambda: data.get_task("mmlu"), lambda: data.resolve_origin("mmlu"),
                 lambda: data.source_note("mmlu", "hub:x"), lambda: data.embedded_gap("mmlu", None)):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == "unknown task 'mmlu'; use one of wikitext, hellaswag, boolq"


# -- selections from a cut of the split --------------------------------------------------------------------------------
def test_a_cut_selects_what_the_whole_split_selects_or_says_what_it_lacks():
    whole = list(range(100))
    chosen = data.select_subset(whole, 10, seed=3)
    cut = data.Cut(tuple(f"r{p}" for p in chosen), tuple(chosen), 100, "cut")
    assert data.select_subset(cut, 10, seed=3) == [f"r{p}" for p in chosen]
    with pytest.raises(DataUnavailable, match=r"cut: this selection \(20 examples, seed 3\) needs .* holds 10"):
        data.select_subset(cut, 20, seed=3)
    with pytest.raises(DataUnavailable):
        data.select_subset(cut, None, seed=3)


def test_a_partial_corpus_slices_like_the_whole_one_or_raises():
    whole = _corpus()
    full = data.slice_wikitext(whole, pages=None, max_tokens=20, seed=1, count_tokens=_words)
    kept = tuple(p for p in whole.pages if p.index in full.page_indices)
    part = data.WikiTextCorpus(kept, "part", population=len(whole.pages))
    sliced = data.slice_wikitext(part, pages=None, max_tokens=20, seed=1, count_tokens=_words)
    assert (sliced.pages, sliced.page_indices) == (full.pages, full.page_indices)
    with pytest.raises(DataUnavailable, match=r"needs page \d+ of the split's 6, which part does not hold"):
        data.slice_wikitext(part, pages=None, max_tokens=10_000, seed=1, count_tokens=_words)


# -- identity: where the data came from, without a path ----------------------------------------------------------------
def _assert_no_path(identity, *paths):
    assert set(identity) == {"data_origin", "dataset", "split", "sha256"}
    for value in identity.values():
        assert "/" not in value and "\\" not in value and not value.startswith("~"), value
        assert all(str(p) not in value for p in paths)
    assert len(identity["sha256"]) == 64 and int(identity["sha256"], 16) >= 0


def test_identity_names_origin_dataset_split_and_sha256_without_a_path(tmp_path, fake_hub):
    cached, _ = fake_hub
    root = _data_dir(tmp_path)
    ident = data.data_identity("boolq", root)
    _assert_no_path(ident, root, tmp_path)
    assert ident["data_origin"] == "data_dir" and (ident["dataset"], ident["split"]) == ("boolq", "validation")
    embedded = data.data_identity("wikitext", None)
    _assert_no_path(embedded, data.EMBEDDED_DIR)
    assert (embedded["data_origin"], embedded["dataset"], embedded["split"]) == ("embedded", "wikitext-2-raw-v1", "test")
    cached.add(data.TASKS["hellaswag"].hub[0])
    hub = data.data_identity("hellaswag", None)
    _assert_no_path(hub)
    assert hub["data_origin"] == "hf_cache"


def test_identity_sha256_is_of_the_evaluated_examples():
    items = [data.BoolQItem(i, "T -- p", f"q{i}", i % 2) for i in range(5)]
    assert data.records_sha256(items[:3]) == data.records_sha256(list(items[:3]))
    assert data.records_sha256(items[:3]) != data.records_sha256(items[:4])
    ident = data.data_identity("boolq", None, items[:2])
    assert ident["sha256"] == data.records_sha256(items[:2])
    s = data.slice_wikitext(_corpus(), pages=None, max_tokens=12, seed=0, count_tokens=_words)
    assert data.records_sha256(s) != data.records_sha256(_corpus())


def test_source_notes_for_embedded_and_fetched_data(tmp_path):
    assert data.source_note("hellaswag", "embedded:hellaswag/validation.jsonl").startswith("embedded slice")
    root = _data_dir(tmp_path)
    (root / data.MANIFEST).write_text(json.dumps({"files": {"boolq/validation.jsonl": {"hub": "aps/super_glue"}}}))
    assert "fetched from hub:aps/super_glue" in data.source_note("boolq", str(root / "boolq/validation.jsonl"))
    assert "blank lines" in data.source_note("wikitext", str(root / "wikitext-2-raw-v1/test.raw"))


# -- a WikiText file for training code ----------------------------------------------------------------------------------
def test_wikitext_raw_file_follows_the_same_order(tmp_path, fake_hub):
    cached, _ = fake_hub
    root = _data_dir(tmp_path)
    path, ident = data.wikitext_raw_file(root, tmp_path / "work")
    assert path == root / data.DATA_FILES["wikitext"] and ident["data_origin"] == "data_dir"
    path, ident = data.wikitext_raw_file(None, tmp_path / "work")
    assert path == data.EMBEDDED_DIR / data.DATA_FILES["wikitext"] and ident["data_origin"] == "embedded"
    _assert_no_path(ident, data.EMBEDDED_DIR)
    with pytest.raises(DataUnavailable, match="embedded slice is not used here"):
        data.wikitext_raw_file(None, tmp_path / "work", allow_embedded=False)
    cached.add("Salesforce/wikitext")
    path, ident = data.wikitext_raw_file(None, tmp_path / "work", allow_embedded=False)
    assert path.parent == tmp_path / "work" and ident["data_origin"] == "hf_cache"
    assert path.read_text() == " \n = Hub Page = \n \n hub text . \n"  # the raw file, blank lines restored


# -- the session skips what no origin serves, before loading a model ---------------------------------------------------
def test_session_skips_a_task_no_origin_serves(no_hub):
    from pytest_genai.evals.config import preset
    from pytest_genai.evals.session import EvalSession

    budget, settings = preset("small")
    session = EvalSession(budget, settings, None)
    with pytest.raises(pytest.skip.Exception, match="pytest-genai data fetch"):
        session.require_data("hellaswag")
    assert EvalSession(*preset("tiny"), None).require_data("hellaswag").kind == "embedded"


# -- subsets ------------------------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 60), limit=st.integers(1, 80), seed=st.integers(0, 10))
def test_select_subset_is_seeded_sized_and_ordered(n, limit, seed):
    items = list(range(n))
    a = data.select_subset(items, limit, seed)
    assert a == data.select_subset(items, limit, seed)
    assert len(a) == min(n, limit) and a == sorted(a) and set(a) <= set(items)


def test_select_subset_rejects_non_positive_limit():
    with pytest.raises(ValueError, match="positive"):
        data.select_subset([1, 2, 3], 0)


def _corpus():
    pages = tuple(data.WikiTextPage(i, f"T{i}", f" = T{i} = \n" + "".join(f" line {i}.{k} \n" for k in range(5)))
                  for i in range(6))
    return data.WikiTextCorpus(pages, "test")


def _words(text):
    return len(text.split())


@settings(max_examples=25, deadline=None)
@given(max_tokens=st.integers(5, 200), seed=st.integers(0, 5))
def test_slice_wikitext_stays_within_the_token_cap(max_tokens, seed):
    s = data.slice_wikitext(_corpus(), pages=None, max_tokens=max_tokens, seed=seed, count_tokens=_words)
    assert 1 <= len(s.pages)
    assert sum(_words(p) for p in s.pages) <= max_tokens or (len(s.pages) == 1 and s.pages[0].count("\n") == 1)
    assert all(p.startswith(" = T") for p in s.pages)  # whole pages or page prefixes at line boundaries
    assert s.truncated == any(p != _corpus().pages[i].text for p, i in zip(s.pages, s.page_indices))


@settings(max_examples=25, deadline=None)
@given(page_tokens=st.integers(3, 60), pages=st.integers(1, 4), seed=st.integers(0, 5))
def test_a_page_cap_spans_several_pages_each_cut_at_a_line(page_tokens, pages, seed):
    corpus = _corpus()
    s = data.slice_wikitext(corpus, pages=pages, max_tokens=10_000, seed=seed, count_tokens=_words,
                            page_tokens=page_tokens)
    assert len(s.pages) == min(pages, len(corpus.pages))  # several pages, not the start of one
    for text, i in zip(s.pages, s.page_indices):
        whole = corpus.pages[i].text
        assert whole.startswith(text) and (text == whole or text.endswith("\n"))  # an opening at a line boundary
        assert _words(text) <= page_tokens or text.count("\n") == 1  # within the cap, or just the first line
    assert s.truncated == any(p != corpus.pages[i].text for p, i in zip(s.pages, s.page_indices))


def test_the_tiny_wikitext_is_the_opening_of_three_articles(no_hub):
    """tiny: 3 pages of the seeded order, each its first ~682 tokens, 2,048 in all (it used to be one article cut
    at 2,048 tokens)."""
    from pytest_genai.evals import runner
    from pytest_genai.evals.config import preset

    budget, _ = preset("tiny")
    sliced = runner.select("wikitext", budget, None, _words).examples
    assert list(sliced.page_indices) == [47, 23, 60] and sliced.truncated
    assert all(0 < _words(p) <= 682 for p in sliced.pages) and sum(_words(p) for p in sliced.pages) <= 2048
    assert [p.splitlines()[0].strip() for p in sliced.pages] == ["= Bintulu =", "= 2003 Pacific typhoon season =",
                                                                 "= Nerva ="]


def test_slice_wikitext_without_cap_keeps_original_order():
    s = data.slice_wikitext(_corpus(), pages=3, max_tokens=None, seed=0, count_tokens=_words)
    assert list(s.page_indices) == sorted(s.page_indices) and len(s.pages) == 3 and not s.truncated


def test_numbers_from_the_offline_copies_carry_a_note():
    assert "blank lines" in data.source_note("wikitext", "/x/wikitext-2-raw-v1/test.raw")
    assert "capitalized" in data.source_note("hellaswag", "/x/hellaswag/validation.jsonl")
    assert data.source_note("boolq", "hub:aps/super_glue").startswith("hub:aps/super_glue")


# -- pytest-genai data fetch DIR (offline: load_dataset is a fake) -----------------------------------------------------
FETCH_ROWS = {
    "Salesforce/wikitext": [{"text": ""}, {"text": " = Alpha = \n"}, {"text": ""}, {"text": " first line , here . \n"},
                            {"text": " = = Part = = \n"}, {"text": " = Beta = \n"}, {"text": " second . \n"}],
    "Rowan/hellaswag": [
        {"ind": 4, "activity_label": "Baking cookies", "ctx_a": "A woman [title] mixes dough.", "ctx_b": "she",
         "ctx": "unused", "endings": ["[step] bakes it.", "sings  loudly.", "c", "d"], "label": "0",
         "source_id": "x", "split": "val", "split_type": "indomain"},
        {"ind": 9, "activity_label": "Surfing", "ctx_a": "A man rides a wave.", "ctx_b": "then he",
         "ctx": "unused", "endings": ["falls.", "flies.", "sleeps.", "eats."], "label": "3",
         "source_id": "y", "split": "val", "split_type": "zeroshot"}],
    "aps/super_glue": [{"question": "is it wet", "passage": "Water -- It is wet.", "idx": 0, "label": 1},
                       {"question": "is fire cold", "passage": "Fire -- It is hot.", "idx": 1, "label": 0}],
}


def _fake_load(repo, name=None, split=None):
    assert (repo, name, split) in [spec.hub for spec in data.TASKS.values()]
    return [dict(r) for r in FETCH_ROWS[repo]]


def test_fetch_writes_the_data_dir_layout_with_checksums(tmp_path, fake_hub, monkeypatch):
    from pytest_genai.evals import fetch

    cached, _ = fake_hub
    target = tmp_path / "new" / "genai-data"
    manifest = fetch.fetch(target, load_dataset=_fake_load, log=lambda line: None)
    for rel in data.DATA_FILES.values():
        assert (target / rel).is_file()
    sums = dict(line.split("  ")[::-1] for line in (target / "SHA256SUMS").read_text().splitlines())
    for rel, digest in sums.items():
        assert data.sha256_file(target / rel) == digest == manifest["files"][rel]["sha256"]
    assert set(sums) == set(data.DATA_FILES.values())
    assert json.loads((target / data.MANIFEST).read_text())["files"]["boolq/validation.jsonl"]["records"] == 2
    raw = (target / data.DATA_FILES["wikitext"]).read_text()
    assert raw.startswith(" \n = Alpha = \n \n first line")  # wiki.test.raw's layout: blank lines are " \n"
    # the folder serves as --genai-data-dir and reads as the Hugging Face cache does
    cached.update(spec.hub[0] for spec in data.TASKS.values())
    monkeypatch.setattr(pytest.importorskip("datasets"), "load_dataset", _fake_load)
    for task in data.TASKS:
        assert data.resolve_origin(task, target).kind == "data_dir"
        from_dir, from_hub = data.load_task(task, target), data.load_task(task, None)
        if task == "wikitext":
            assert [p.text for p in from_dir.pages] == [p.text for p in from_hub.pages]
        else:
            assert from_dir == from_hub
    assert "fetched from hub:Rowan/hellaswag" in data.source_note("hellaswag", str(target / "hellaswag/validation.jsonl"))


def test_fetch_refuses_a_non_empty_folder_without_force(tmp_path, capsys):
    from pytest_genai.evals import fetch

    (tmp_path / "keep.txt").write_text("mine")
    assert fetch.main(["fetch", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not empty; pass --force" in err[0] and str(tmp_path) in err[0]
    (tmp_path / "file").write_text("x")
    assert fetch.main(["fetch", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
    assert fetch.main(["fetch", str(tmp_path / "x"), "--tasks", "mmlu"]) == 2
    assert "unknown task(s) mmlu" in capsys.readouterr().err


def test_fetch_with_force_replaces_only_the_data_files(tmp_path):
    from pytest_genai.evals import fetch

    (tmp_path / "keep.txt").write_text("mine")
    fetch.fetch(tmp_path, ["boolq"], force=True, load_dataset=_fake_load, log=lambda line: None)
    assert (tmp_path / "keep.txt").read_text() == "mine" and (tmp_path / "boolq/validation.jsonl").is_file()


def test_fetch_without_network_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import socket

    from pytest_genai.evals import fetch

    def offline(repo, name=None, split=None):
        if repo == "aps/super_glue":
            try:
                raise socket.gaierror(-2, "Name or service not known")
            except OSError as exc:
                raise RuntimeError(f"Couldn't reach '{repo}' on the Hub\nsecond line") from exc
        return _fake_load(repo, name, split)

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    target = tmp_path / "d"
    assert fetch.main(["fetch", str(target)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "boolq: could not download aps/super_glue (boolq), split validation: no network" in err[0]
    assert not target.exists()  # nothing written when any split failed
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert fetch.main(["fetch", str(target)]) == 1
    assert "HF_DATASETS_OFFLINE is set: unset it to download" in capsys.readouterr().err


def test_fetch_rejects_rows_of_another_layout(tmp_path):
    from pytest_genai.evals import fetch

    def wrong(repo, name=None, split=None):
        return [{"sentence": "x"}]

    with pytest.raises(fetch.FetchError, match="row 0 has no field 'text'"):
        fetch.fetch(tmp_path / "d", ["wikitext"], load_dataset=wrong, log=lambda line: None)


def test_data_is_a_pytest_genai_subcommand(capsys):
    from pytest_genai.cli import SUBCOMMANDS, main

    assert SUBCOMMANDS["data"][0] == "pytest_genai.evals.fetch:main"
    with pytest.raises(SystemExit) as exc:
        main(["data", "fetch", "--help"])
    assert exc.value.code == 0 and "--force" in capsys.readouterr().out


def test_the_hf_cache_counts_for_a_task_only_with_its_config(tmp_path, monkeypatch):
    """lm-eval's other super_glue tasks cache ``aps/super_glue`` too: a cache holding only its ``rte`` config is not
    BoolQ's (the embedded slice serves instead); the ``boolq`` folder, in either cache, is."""
    hub_constants = pytest.importorskip("huggingface_hub.constants")
    datasets_config = pytest.importorskip("datasets.config")
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets_config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    (tmp_path / "hub" / "datasets--aps--super_glue" / "snapshots" / "abc" / "rte").mkdir(parents=True)
    (tmp_path / "datasets" / "aps___super_glue" / "rte").mkdir(parents=True)
    assert not data.hub_cached("aps/super_glue", "boolq") and data.hub_cached("aps/super_glue", "rte")
    assert data.resolve_origin("boolq", None).kind == "embedded"
    (tmp_path / "hub" / "datasets--aps--super_glue" / "snapshots" / "abc" / "boolq").mkdir()
    assert data.hub_cached("aps/super_glue", "boolq") and data.resolve_origin("boolq", None).kind == "hf_cache"
    (tmp_path / "datasets" / "Rowan___hellaswag").mkdir()
    assert data.hub_cached("Rowan/hellaswag") and data.resolve_origin("hellaswag", None).kind == "hf_cache"


def test_a_cached_dataset_that_cannot_be_read_is_unavailable_with_the_reason(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(repo, name=None, split=None):
        raise ConnectionError(f"Couldn't reach '{repo}' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setattr(data, "hub_cached", lambda repo, config=None: True)
    with pytest.raises(data.DataUnavailable, match=r"boolq: aps/super_glue \(boolq, validation\) is in the Hugging "
                                                   r"Face cache but could not be read from it: Couldn't reach"):
        data.load_task("boolq", None)
