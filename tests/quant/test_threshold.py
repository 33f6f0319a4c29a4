"""The global threshold tau: exact k-th smallest |w| over many tensors, never concatenated; the C kernel's
streaming pass and the torch one agree exactly."""
import contextlib

import pytest
import torch
from hypothesis import given, settings, strategies as st

from pytest_genai.quant import threshold as T
from pytest_genai.quant.metrics import threshold_rank


def _reference(ws, sparsity):
    allabs = torch.cat([w.reshape(-1).abs() for w in ws])
    k = threshold_rank(sparsity, allabs.numel())
    return float(torch.kthvalue(allabs, k).values), k, allabs


@st.composite
def tensor_lists(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    shapes = draw(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=5))
    if draw(st.booleans()):  # past the kernel's 4096-weight blocks (small tensors exercise only its tail loop)
        shapes.append(draw(st.tuples(st.integers(64, 130), st.integers(64, 130))))
    ties = draw(st.booleans())
    out = []
    for s in shapes:
        w = torch.randn(s, generator=g) * draw(st.floats(1e-3, 10))
        if ties:  # coarse values: many equal magnitudes, zeros included
            w = torch.round(w * 2) / 2
        out.append(w)
    return out


PATHS = ("native_c", "torch")


@contextlib.contextmanager
def _scan_through(path, scans=True):
    """Run the streaming pass and the selections through ``path``: the compiled kernels (skipped where they cannot
    be built) or torch and numpy."""
    if path == "native_c" and T._native_kernel([torch.ones(1)]) is None:
        from pytest_genai.runtime import native

        pytest.skip(f"the C kernel is not available here: {native.why_not(T._KERNEL)}")
    original = T._library
    if path == "torch":
        T._library = lambda: None
    try:
        yield
    finally:
        T._library = original
    if scans:
        assert T.scan_path().split(" ")[0] == path


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=25, deadline=None)
@given(ws=tensor_lists(), sparsity=st.floats(0.01, 0.99), sample=st.sampled_from([16, 64, 1 << 20]))
def test_exact_threshold_equals_kthvalue_of_the_concatenation(path, ws, sparsity, sample):
    ref, k, allabs = _reference(ws, sparsity)
    with _scan_through(path):
        res = T.global_threshold(ws, sparsity, exact=True, sample_size=sample)
    assert res.tau == ref and res.k == k
    assert res.rank == int((allabs <= ref).sum())  # rank of tau: within ties of k
    assert res.n_above == [int((w.abs() > ref).sum()) for w in ws]
    # sums are fp32 within a 2**18-element chunk, fp64 across chunks (see threshold._scan)
    assert res.sum_abs == pytest.approx([float(w.abs().double().sum()) for w in ws], rel=1e-5)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=25, deadline=None)
@given(ws=tensor_lists(), sparsity=st.floats(0.01, 0.99))
def test_sampled_threshold_reports_its_true_rank(path, ws, sparsity):
    with _scan_through(path):
        res = T.global_threshold(ws, sparsity, exact=False, sample_size=64)
    allabs = torch.cat([w.reshape(-1).abs() for w in ws])
    assert res.exact is False
    assert res.rank == int((allabs <= res.tau).sum())
    assert res.n_above == [int((w.abs() > res.tau).sum()) for w in ws]


def test_bracket_miss_falls_back_to_counting_bisection(monkeypatch):
    g = torch.Generator().manual_seed(0)
    ws = [torch.randn(50, 30, generator=g), torch.randn(7, 100, generator=g)]
    ref, k, _ = _reference(ws, 0.3)
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (10.0, 20.0))  # far above rank k
    monkeypatch.setattr(T, "_MAX_CANDIDATES", 8)
    assert T.global_threshold(ws, 0.3).tau == ref
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (0.0, 1e-6))  # below rank k
    assert T.global_threshold(ws, 0.3).tau == ref


def test_run_of_ties_at_rank_k_narrows_to_that_value(monkeypatch):
    ws = [torch.ones(20, 20), torch.full((10, 10), 3.0)]
    monkeypatch.setattr(T, "bracket", lambda sample, k, n, z=6.0: (5.0, 9.0))
    monkeypatch.setattr(T, "_MAX_CANDIDATES", 4)
    res = T.global_threshold(ws, 0.5)
    assert res.tau == 1.0 and res.rank == 400 and res.n_above == [0, 100]


def test_bf16_weights_compare_exactly():
    g = torch.Generator().manual_seed(3)
    ws = [torch.randn(33, 17, generator=g).to(torch.bfloat16)]
    ref, _, _ = _reference([w.float() for w in ws], 0.3)
    assert T.global_threshold(ws, 0.3).tau == ref


def test_empty_input_rejected():
    with pytest.raises(ValueError, match="at least one non-empty"):
        T.global_threshold([], 0.3)
    with pytest.raises(ValueError, match="sparsity=1.2"):
        T.global_threshold([torch.ones(2, 2)], 1.2)


@pytest.mark.parametrize("expected", [0, 10**6])
def test_the_kernel_returns_what_torch_does_also_when_the_bracket_overflows_its_buffer(expected):
    """A bracket that holds more values than the buffer sized from ``expected`` (0: 256 slots) is read again with
    room for all; counts, candidates (in order) and sums match the torch pass."""
    g = torch.Generator().manual_seed(5)
    ws = [torch.randn(300, 70, generator=g), torch.randn(4097, generator=g), torch.randn(1, 3, generator=g)]
    ws[0][0, :5] = float("nan")
    with _scan_through("native_c"):
        got = T._scan(ws, 0.2, 0.9, keep=True, expected=expected)
    with _scan_through("torch"):
        want = T._scan(ws, 0.2, 0.9, keep=True, expected=expected)
    assert got[0] == want[0] and got[1] == want[1] and sum(got[1]) > 256
    assert torch.equal(got[3].values(), want[3].values()) and got[3].spans == want[3].spans
    assert all(torch.isnan(torch.tensor([a, b])).all() for a, b in zip(got[2][:1], want[2][:1]))  # NaN propagates
    assert got[2][1:] == pytest.approx(want[2][1:], rel=1e-6)


@st.composite
def magnitudes(draw):
    """Non-negative fp32 values as the selections see them: a sample or a bracket's candidates, with ties, zeros,
    subnormals, infinities and values across the whole exponent range."""
    values = draw(st.lists(st.floats(0, None, width=32, allow_nan=False), min_size=1, max_size=300))
    if draw(st.booleans()):  # many equal values: the selection must land inside a run of ties
        values = values + [values[0]] * draw(st.integers(1, 200))
    t = torch.tensor(values, dtype=torch.float32)
    return t[torch.randperm(t.numel(), generator=torch.Generator().manual_seed(draw(st.integers(0, 99))))]


@settings(max_examples=200, deadline=None)
@given(values=magnitudes(), data=st.data())
def test_the_kernel_selects_the_same_order_statistics_as_numpy(values, data):
    ranks = data.draw(st.lists(st.integers(0, values.numel() - 1), min_size=1, max_size=3))
    before = values.clone()
    with _scan_through("native_c", scans=False):
        got = T._order_stats(values, ranks)
    with _scan_through("torch", scans=False):
        want = T._order_stats(values, ranks)
    assert got == want == [float(torch.sort(values).values[r]) for r in ranks]
    assert torch.equal(values, before)  # the selection works in its scratch buffer, never in the candidates
    tau = data.draw(st.sampled_from(values.tolist()))
    with _scan_through("native_c", scans=False):
        above = T._count_above(values, tau)
    assert above == int((values > tau).sum())


@pytest.mark.parametrize("where", [0, 1, 30, 31, 32, 63, 64, 70])
def test_a_selection_finds_a_value_alone_in_its_bucket_wherever_it_sits(where):
    """The selection skips runs of 32 values that hold none of its bucket: the one value of a bucket is found at
    either end of a run and in the tail after the last whole run."""
    values = [0.25] * 71
    values[where] = 0.5
    for i in range(where + 1, 71):
        values[i] = 1.0
    t = torch.tensor(values, dtype=torch.float32)
    with _scan_through("native_c", scans=False):
        assert T._order_stats(t, [where, where - 1 if where else 70]) == [0.5, 0.25 if where else 1.0]


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 20_000), min_size=1, max_size=6), sample_size=st.integers(16, 5000),
       seed=st.integers(0, 2**31 - 1))
def test_the_kernels_sample_is_the_torch_gathers_value_for_value(sizes, sample_size, seed):
    """The same runs drawn from the same generator: the C gather and the torch one give the same magnitudes in the
    same order (small tensors whole, the rest as runs), so the bracket, and the candidates kept, do not depend on
    which path ran."""
    g = torch.Generator().manual_seed(seed)
    ws = [torch.randn(n, generator=g) for n in sizes]
    with _scan_through("native_c", scans=False):
        got = T.sample_abs(ws, sample_size, seed)
    with _scan_through("torch", scans=False):
        want = T.sample_abs(ws, sample_size, seed)
    assert got.dtype == torch.float32 and torch.equal(got, want)
    assert (got >= 0).all()


def test_bounds_compare_as_fp32_on_both_paths():
    """torch compares fp32 weights with a Python scalar in fp32; the kernel takes C floats: the same rounding."""
    ws = [torch.tensor([0.1, 0.2, 0.30000001192092896, 0.4])]
    lo, hi = 0.15, 0.3  # neither is an fp32 value; 0.3 rounds to the third weight
    with _scan_through("native_c"):
        got = T._scan(ws, lo, hi, keep=True, expected=4)
    with _scan_through("torch"):
        want = T._scan(ws, lo, hi, keep=True, expected=4)
    assert got[0] == want[0] == [1] and got[1] == want[1] == [2]


@pytest.mark.parametrize(("isa", "flags"), [("avx2", ("-mno-avx512f",)), ("portable", ("-mno-avx512f", "-mno-avx2"))])
def test_the_narrower_kernels_match_torch_too(monkeypatch, tmp_path, isa, flags):
    """Built without AVX-512 (as on CPUs that lack it: the AVX2 loop), or without AVX2 too (the block-and-mask
    loop), the kernel gives the same counts and candidates, and its sums to fp32 rounding."""
    from pytest_genai.runtime import native

    if native.compiler() is None:
        pytest.skip("no C compiler here")
    if isa == "avx2" and "avx2" not in native.vector_extensions():
        pytest.skip("this CPU has no AVX2")
    monkeypatch.setenv("PYTEST_GENAI_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "FLAGS", native.FLAGS + flags)
    native.load.cache_clear()
    try:
        assert T._library().genai_scan_isa().decode() == isa
        g = torch.Generator().manual_seed(9)
        ws = [torch.randn(300, 70, generator=g), torch.randn(4097, generator=g), torch.randn(9000, generator=g)]
        for expected in (0, 10**6):
            with _scan_through("native_c"):
                got = T._scan(ws, 0.2, 0.9, keep=True, expected=expected)
            with _scan_through("torch"):
                want = T._scan(ws, 0.2, 0.9, keep=True, expected=expected)
            assert got[0] == want[0] and got[1] == want[1]
            assert torch.equal(got[3].values(), want[3].values())
            assert got[2] == pytest.approx(want[2], rel=1e-6)
        with _scan_through("native_c"):
            assert T.global_threshold(ws, 0.3).tau == _reference(ws, 0.3)[0]
    finally:
        native.load.cache_clear()


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 3 * 10**6), min_size=1, max_size=12), threads=st.integers(1, 16))
def test_scan_pieces_cover_each_tensor_in_order_on_kernel_blocks(sizes, threads):
    pieces = T.scan_pieces(sizes, threads)
    step = max(b - a for _, a, b in pieces)
    for i, size in enumerate(sizes):
        mine = [(a, b) for j, a, b in pieces if j == i]
        assert mine[0][0] == 0 and mine[-1][1] == size
        assert all(b0 == a1 for (_, b0), (a1, _) in zip(mine, mine[1:]))  # contiguous, in order
        assert all(a % T._KERNEL_BLOCK == 0 and b > a for a, b in mine)
    assert [j for j, _, _ in pieces] == sorted(j for j, _, _ in pieces)
    # no piece much longer than an even share: the threads finish together whatever the tensors' sizes
    assert step <= max(T._KERNEL_BLOCK, -(-sum(sizes) // (threads * T._PIECES_PER_THREAD)) + T._KERNEL_BLOCK)


def test_one_large_tensor_is_read_by_every_thread():
    """A layer of TinyLlama's shape: the MLP's three 2048x5632 weights are split, not one per thread."""
    sizes = [2048 * 2048, 2048 * 256, 2048 * 256, 2048 * 2048] + [2048 * 5632] * 3
    pieces = T.scan_pieces(sizes, 2)
    assert len(pieces) >= 2 * T._PIECES_PER_THREAD
    assert max(b - a for _, a, b in pieces) <= -(-sum(sizes) // 16) + T._KERNEL_BLOCK


def test_pieces_keep_each_tensors_candidates_in_order_when_one_piece_overflows(monkeypatch):
    """The bracket's values sit in the middle of one tensor: the piece holding them overflows its region and is read
    again; counts, candidates (in tensor order) and sums still equal the torch pass's."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    g = torch.Generator().manual_seed(11)
    big = torch.full((200_000,), 5.0)
    big[90_000:95_000] = torch.rand(5_000, generator=g) * 0.5 + 0.25  # in [0.25, 0.75]
    ws = [torch.randn(5000, generator=g), big, torch.randn(70_000, generator=g)]
    assert len({j for j, _, _ in T.scan_pieces([w.numel() for w in ws], 4)}) == 3
    with _scan_through("native_c"):
        got = T._scan(ws, 0.25, 0.75, keep=True, expected=1000)
    with _scan_through("torch"):
        want = T._scan(ws, 0.25, 0.75, keep=True, expected=1000)
    assert got[0] == want[0] and got[1] == want[1] and got[1][1] == 5000
    assert torch.equal(got[3].values(), want[3].values()) and got[3].spans == want[3].spans
    assert got[2] == pytest.approx(want[2], rel=1e-6)


def test_the_thread_pool_path_gives_what_the_openmp_path_does(monkeypatch):
    """Where the kernel is built without OpenMP the pieces run on a thread pool: the same counts, candidates and
    sums, and the recorded path says which ran."""
    if T._native_kernel([torch.ones(1)]) is None:
        pytest.skip("the C kernel is not available here")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    g = torch.Generator().manual_seed(12)
    ws = [torch.randn(300, 700, generator=g), torch.randn(50_000, generator=g)]
    lib = T._library()
    first = T._scan(ws, 0.2, 0.25, keep=True, expected=1000)
    used = T.scan_path()
    monkeypatch.setattr(lib, "genai_scan_openmp", lambda: 0)
    pooled = T._scan(ws, 0.2, 0.25, keep=True, expected=1000)
    isa = lib.genai_scan_isa().decode()
    assert T.scan_path() == f"native_c ({isa})" and used in (f"native_c ({isa})", f"native_c ({isa}, openmp)")
    assert first[0] == pooled[0] and first[1] == pooled[1] and first[2] == pooled[2]
    assert torch.equal(first[3].values(), pooled[3].values()) and first[3].spans == pooled[3].spans
