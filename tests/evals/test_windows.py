import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_genai.evals.windows import Window, rolling_windows, sliding_windows

PREFIX = -1
token_lists = st.lists(st.integers(0, 50), min_size=0, max_size=80)


def _check_cover(tokens, windows, max_len):
    predicted = [t for w in windows for t in w.continuation]
    assert predicted == list(tokens)  # every token predicted exactly once, in order
    for w in windows:
        assert w.context, "each window conditions on at least one token"
        assert len(w.context) + len(w.continuation) - 1 <= max_len  # model input length


@settings(max_examples=25, deadline=None)
@given(tokens=token_lists, max_len=st.integers(1, 12), data=st.data())
def test_rolling_windows_cover_every_token_exactly_once(tokens, max_len, data):
    context_len = data.draw(st.integers(1, max_len))
    windows = list(rolling_windows(tokens, PREFIX, max_len, context_len))
    _check_cover(tokens, windows, max_len)
    if tokens:
        assert windows[0].context == (PREFIX,)
    for w in windows[1:]:  # later windows: context is the tokens right before the scored ones
        start = sum(len(x.continuation) for x in windows[: windows.index(w)])
        assert w.context == tuple(tokens[start - len(w.context): start])
        assert len(w.context) >= min(context_len, start)


@settings(max_examples=25, deadline=None)
@given(tokens=token_lists, max_len=st.integers(1, 12), data=st.data())
def test_rolling_windows_equal_lm_eval(tokens, max_len, data):
    utils = pytest.importorskip("lm_eval.utils")
    context_len = data.draw(st.integers(1, max_len))
    theirs = [tuple(map(tuple, utils.make_disjoint_window(w)))
              for w in utils.get_rolling_token_windows(tokens, PREFIX, max_len, context_len)]
    ours = [(w.context, w.continuation) for w in rolling_windows(tokens, PREFIX, max_len, context_len)]
    assert ours == theirs


@settings(max_examples=25, deadline=None)
@given(tokens=token_lists, context=st.integers(1, 12), data=st.data())
def test_sliding_windows_keep_at_least_context_minus_stride(tokens, context, data):
    stride = data.draw(st.integers(1, context))
    windows = list(sliding_windows(tokens, PREFIX, context, stride))
    _check_cover(tokens, windows, context)
    for w in windows[1:]:
        assert len(w.context) >= context - stride
        assert len(w.continuation) <= stride


def test_sliding_windows_stride_equal_context_are_non_overlapping_chunks():
    tokens = list(range(10))
    windows = list(sliding_windows(tokens, PREFIX, context=4, stride=4))
    assert windows == [
        Window((PREFIX,), (0, 1, 2, 3)),
        Window((3,), (4, 5, 6, 7)),  # conditioned only on the previous chunk's last token
        Window((5, 6, 7), (8, 9)),   # the last window is left-filled to the full context, as in lm-eval
    ]


def test_sliding_windows_hand_example_with_overlap():
    windows = list(sliding_windows(list(range(7)), PREFIX, context=4, stride=2))
    # each later window's input is the full context of 4 tokens: 2 new scored tokens on 2+ of context
    assert windows == [Window((PREFIX,), (0, 1, 2, 3)), Window((1, 2, 3), (4, 5)), Window((2, 3, 4, 5), (6,))]


@pytest.mark.parametrize("context, stride, match", [(0, 1, "context"), (4, 0, "stride"), (4, 5, "stride")])
def test_sliding_windows_reject_bad_settings(context, stride, match):
    with pytest.raises(ValueError, match=match):
        list(sliding_windows([1, 2, 3], PREFIX, context, stride))


def test_rolling_windows_reject_context_len_outside_range():
    with pytest.raises(ValueError, match="context_len"):
        list(rolling_windows([1, 2], PREFIX, max_len=4, context_len=5))
