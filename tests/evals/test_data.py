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


def test_hub_rows_group_into_pages():
    rows = ["", " = A = \n", "", " x \n", " = = H = = \n", " = B = \n", " y \n"]
    corpus = data.wikitext_from_rows(rows, "hub:test")
    assert [p.text for p in corpus.pages] == [" = A = \n x \n = = H = = \n", " = B = \n y \n"]


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


# -- where data comes from --------------------------------------------------------------------------------------------
def test_missing_data_dir_file_names_the_flag_and_the_expected_file(tmp_path):
    with pytest.raises(DataUnavailable, match=r"hellaswag/validation.jsonl.*--genai-data-dir"):
        data.load_task("hellaswag", tmp_path)


def test_no_data_dir_and_no_hub_cache_names_the_flag(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "hub_cached", lambda repo: False)
    with pytest.raises(DataUnavailable, match="--genai-data-dir"):
        data.load_task("boolq", None)


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task 'mmlu'"):
        data.load_task("mmlu", None)


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


def test_slice_wikitext_without_cap_keeps_original_order():
    s = data.slice_wikitext(_corpus(), pages=3, max_tokens=None, seed=0, count_tokens=_words)
    assert list(s.page_indices) == sorted(s.page_indices) and len(s.pages) == 3 and not s.truncated


def test_numbers_from_the_offline_copies_carry_a_note():
    assert "blank lines" in data.source_note("wikitext", "/x/wikitext-2-raw-v1/test.raw")
    assert "capitalized" in data.source_note("hellaswag", "/x/hellaswag/validation.jsonl")
    assert data.source_note("boolq", "hub:aps/super_glue").startswith("hub:aps/super_glue")
