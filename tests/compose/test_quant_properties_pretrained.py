"""The quantizer's properties on a pretrained model (the embedded SmolLM2-135M, or ``--genai-model PATH``), and
proof that they catch real bugs: each deliberately broken quantizer below makes the unchanged property body fail.

A hunt runs a property's own body (``test.hypothesis.inner_test``) under bug-hunting settings: derandomized, no
example database, no shrinking (the first failing example is enough), at most ``max_examples`` examples.
"""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from pytest_genai.quant import codecs, metrics
from pytest_genai.quant.formats import SCALE_BYTES, FormatSpec
from pytest_genai.quant.modules import QuantLinear
from pytest_genai.compose.quant_properties import Quantizer, QuantizerProperties

P = QuantizerProperties


def hunt(test, max_examples: int = 40):
    """``test``'s body (a QuantizerProperties property) under bug-hunting settings."""
    found = settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                     phases=[Phase.generate], report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    return found(given(data=st.data())(test.hypothesis.inner_test))


def _round_scale_down(scale):
    mantissa, exponent = torch.frexp(scale)
    return torch.ldexp(torch.floor(mantissa * 65536.0) / 65536.0, exponent.to(scale.dtype)).to(scale.dtype)


class TestPretrainedQuantizer(QuantizerProperties):
    """Every property of QuantizerProperties on pytest-genai's own quantizer, then the broken ones."""

    def test_a_scale_rounded_down_is_caught(self, property_model, monkeypatch):
        # |w| / s > qmax by < 2**-15: the clamped code's error stays far inside s / 2, so only the fit catches it
        monkeypatch.setattr(codecs, "round_scale_up", _round_scale_down)
        with pytest.raises(AssertionError, match="rounded down, so codes are clamped"):
            hunt(P.test_scales_fit_their_group)(self, property_model=property_model)

    def test_a_last_group_scaled_by_its_whole_row_is_caught(self, property_model, monkeypatch):
        # the group size ignored for the last group: still inside its (larger) bound, and idempotent
        real = codecs.compute_scales

        def compute_scales(w, spec, group_size, where="weight"):
            scale = real(w, spec, group_size, where)
            if scale.shape[1] > 1:
                scale[:, -1:] = real(w, spec, w.shape[1], where)
            return scale

        monkeypatch.setattr(codecs, "compute_scales", compute_scales)
        with pytest.raises(AssertionError, match="does not come from its own group"):
            hunt(P.test_scales_fit_their_group)(self, property_model=property_model)

    def test_dequantizing_through_bf16_is_caught_by_idempotence(self, property_model, monkeypatch):
        # a quantizer of one's own (the protocol): its error stays inside s / 2, but 127 * s no longer survives
        # the round trip exactly, so re-quantizing finds other scales
        mine = Quantizer(name="bf16-dequantize", dequantize=lambda q: codecs.dequantize(q, torch.bfloat16).float())
        monkeypatch.setattr(self, "quantizer", mine)
        with pytest.raises(AssertionError, match="re-quantizing the dequantized weight changed"):
            hunt(P.test_quantize_is_idempotent)(self, property_model=property_model)

    def test_swapped_int4_nibbles_are_caught(self, property_model, monkeypatch):
        real = codecs.unpack_int4
        monkeypatch.setattr(codecs, "unpack_int4", lambda packed: real(packed).view(packed.shape[0], -1, 2)
                            .flip(-1).reshape(packed.shape[0], -1))
        with pytest.raises(AssertionError, match=r"int4 .* exceeds the bound"):
            hunt(P.test_round_trip_error_within_the_format_bound)(self, property_model=property_model)

    def test_a_missing_nan_check_is_caught(self, property_model, monkeypatch):
        monkeypatch.setattr(codecs, "_check_finite", lambda amax, where: None)
        with pytest.raises(AssertionError, match="accepted a weight containing nan/inf"):
            hunt(P.test_nan_and_inf_weights_are_rejected)(self, property_model=property_model)

    def test_a_score_that_is_not_scale_free_is_caught(self, property_model, monkeypatch):
        # mean |w| without dividing by tau: same ranking, but thresholds on it move with the weights' scale
        monkeypatch.setitem(metrics.SENSITIVITY_DEFINITIONS, "mean_abs_over_threshold",
                            lambda n, n_above, sum_abs, tau: sum_abs / n)
        with pytest.raises(AssertionError, match="is not scale invariant"):
            hunt(P.test_scaling_weights_keeps_scores_ranking_and_plan, 20)(self, property_model=property_model)

    def test_predicted_bytes_without_group_scales_are_caught(self, property_model, monkeypatch):
        def stored_bytes(spec, shape, group_size=None):  # one scale per row, whatever the groups
            rows, cols = int(shape[0]), int(shape[1])
            return rows * cols * spec.bits // 8 + (rows * SCALE_BYTES if spec.scaled else 0)

        monkeypatch.setattr(FormatSpec, "stored_bytes", stored_bytes)
        with pytest.raises(AssertionError, match="the plan predicts"):
            hunt(P.test_measured_bytes_equal_predicted, 20)(self, property_model=property_model)

    def test_real_mode_with_bf16_scales_is_caught(self, property_model, monkeypatch):
        real = QuantLinear.forward

        def forward(self, x):  # the per-channel path multiplies by scales rounded to bf16
            if self.scale is not None and self.scale.shape[1] == 1:
                y = F.linear(x, codecs.codes_as(self.quantized_weight(), x.dtype))
                y = y * self.scale.reshape(-1).to(torch.bfloat16).to(x.dtype)
                return y if self.bias is None else y + self.bias
            return real(self, x)

        monkeypatch.setattr(QuantLinear, "forward", forward)
        with pytest.raises(AssertionError, match="fake vs real logits differ"):
            hunt(P.test_fake_and_real_quantization_give_the_same_logits, 20)(self, property_model=property_model)
