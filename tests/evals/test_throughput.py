import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_genai.evals import throughput

from .conftest import tiny_llama


def test_matmul_share_counts_only_matmul_ops():
    times = {"aten::mm": 60.0, "aten::addmm": 20.0, "aten::_scaled_dot_product_flash_attention_for_cpu": 15.0,
             "aten::mul": 5.0}
    assert throughput.matmul_share(times) == pytest.approx(0.8)


@given(st.dictionaries(st.sampled_from(["aten::mm", "aten::bmm", "aten::mul", "aten::silu", "aten::add"]),
                       st.floats(0.0, 1e6), min_size=1).filter(lambda d: sum(d.values()) > 0))
def test_matmul_share_is_a_fraction(times):
    share = throughput.matmul_share(times)
    assert 0.0 <= share <= 1.0


@pytest.mark.parametrize("times, match", [({}, "no profiled"), ({"aten::mm": -1.0, "aten::mul": 2.0}, "non-negative"),
                                          ({"aten::mm": 0.0}, "no time")])
def test_matmul_share_rejects_bad_input(times, match):
    with pytest.raises(ValueError, match=match):
        throughput.matmul_share(times)


def test_amdahl_ceiling():
    assert throughput.amdahl_ceiling(0.8) == pytest.approx(1.25)
    assert throughput.amdahl_ceiling(1.0) == 1.0
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="fixed share"):
            throughput.amdahl_ceiling(bad)


def test_profile_ops_sees_the_linear_layers_and_counts_their_flops():
    import torch

    model = tiny_llama(hidden=64, layers=2)
    ids = torch.randint(0, 250, (2, 64))
    prof = throughput.profile_ops(throughput.forward_fn(model, ids, "cpu", lambda: None))
    assert all(name.startswith("aten::") and t > 0 for name, t in prof.self_us.items())
    assert set(prof.self_us) & {"aten::mm", "aten::addmm"}, sorted(prof.self_us)
    assert 0 < prof.matmul_share < 1
    # every linear layer: 2 * tokens * in * out; tiny_llama: q/o 64x64, k/v 64x32 (2 of 4 heads), MLP 3 x 64x128,
    # LM head 64x260, for 128 tokens
    per_layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128
    expected = 2 * 128 * (2 * per_layer + 64 * 260)
    assert prof.matmul_flops == expected
    assert prof.matmul_tflops > 0


def test_op_profile_without_matmuls_has_no_rate():
    prof = throughput.OpProfile({"aten::mul": 5.0}, 0)
    assert prof.matmul_share == 0
    with pytest.raises(ValueError, match="no matrix multiply"):
        prof.matmul_tflops


def test_token_batch_names_the_shortfall():
    assert throughput.token_batch(list(range(12)), 2, 5).tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    with pytest.raises(ValueError, match="needs 12 tokens .* has 5"):
        throughput.token_batch(list(range(5)), 3, 4)


def test_time_rounds_and_tokens_per_s():
    calls = []
    times = throughput.time_rounds(lambda: calls.append(1), rounds=3, warmup=2)
    assert len(calls) == 5 and len(times) == 3 and all(t >= 0 for t in times)
    assert throughput.tokens_per_s(100, 0.5) == 200
    with pytest.raises(ValueError, match="rounds"):
        throughput.time_rounds(lambda: None, rounds=0, warmup=0)
    with pytest.raises(ValueError, match="positive"):
        throughput.tokens_per_s(1, 0.0)
