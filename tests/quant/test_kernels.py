"""The device-kernel layer (``quant.kernels``): selection rules per device and format with faked capabilities, the
static-scale fp8 ``_scaled_mm`` layer's shapes, scales and numerics on the CPU, torchao's int8 path applied to exactly
the named linears, and the kernel label a benchmark row records as config."""
import subprocess
import sys

import pytest

from pytest_genai.quant import kernels
from pytest_genai.quant.kernels import (KERNEL_NATIVE, KERNEL_SCALED_MM_FP8, KERNEL_TORCHAO_INT8,
                                        KERNEL_TORCHAO_INT8_COMPILE, KernelCaps, select_kernel)

H100 = KernelCaps("cuda", (9, 0), torchao=True, scaled_mm=True, compile=True)


@pytest.mark.parametrize("caps, fmt, kernel", [
    (H100, "int8", KERNEL_TORCHAO_INT8_COMPILE),
    (H100, "fp8_e4m3", KERNEL_SCALED_MM_FP8),
    (KernelCaps("cuda", (8, 9), torchao=True, scaled_mm=True, compile=True), "fp8_e4m3", KERNEL_SCALED_MM_FP8),
    (KernelCaps("cuda", (8, 0), torchao=True, scaled_mm=True, compile=True), "fp8_e4m3", KERNEL_NATIVE),  # A100
    (KernelCaps("cuda", (8, 0), torchao=True, compile=True), "int8", KERNEL_TORCHAO_INT8_COMPILE),
    (KernelCaps("cuda", (9, 0), torchao=False, scaled_mm=True, compile=True), "int8", KERNEL_NATIVE),
    (KernelCaps("cuda", (9, 0), torchao=True, scaled_mm=False, compile=True), "fp8_e4m3", KERNEL_NATIVE),
    (KernelCaps("cpu", torchao=True, scaled_mm=True), "int8", KERNEL_TORCHAO_INT8),
    (KernelCaps("cpu", torchao=True, scaled_mm=True), "fp8_e4m3", KERNEL_SCALED_MM_FP8),
    (KernelCaps("hpu", torchao=True, scaled_mm=True), "fp8_e4m3", KERNEL_NATIVE),
])
def test_select_kernel_picks_the_fastest_available_path(caps, fmt, kernel):
    choice = select_kernel(fmt, caps)
    assert choice.kernel == kernel and choice.fmt == fmt
    assert choice.native == (kernel == KERNEL_NATIVE)
    assert choice.reason


def test_a_native_choice_says_why():
    assert "8.0" in select_kernel("fp8_e4m3", KernelCaps("cuda", (8, 0), scaled_mm=True)).reason
    assert "torchao" in select_kernel("int8", KernelCaps("cpu")).reason


def test_bad_inputs_name_the_fix():
    with pytest.raises(ValueError, match="use one of"):
        select_kernel("int4", H100)
    with pytest.raises(ValueError, match="capability"):
        KernelCaps("cuda")


def test_compile_by_default_on_cuda_only():
    assert kernels.default_compile("cuda") and not kernels.default_compile("cpu")


def test_probe_caps_on_this_cpu():
    from pytest_genai.quant.backends import torchao_available
    from pytest_genai.quant.fp8 import _probe_scaled_mm

    caps = kernels.probe_caps("cpu")
    assert caps == KernelCaps("cpu", None, torchao_available() is None,
                              _probe_scaled_mm("cpu", tensorwise=True) is None, False)
    assert kernels.probe_caps("cpu", compile=True).compile


def test_importing_kernels_does_not_import_torch():
    code = "import sys, pytest_genai.quant.kernels as k; k.select_kernel('int8', k.KernelCaps('cpu')); " \
           "assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the static-scale fp8 layer (runs where the CPU build has torch._scaled_mm) -------------------------------------
torch = pytest.importorskip("torch")
from pytest_genai.quant import fp8  # noqa: E402

needs_scaled_mm = pytest.mark.skipif(fp8._probe_scaled_mm("cpu", tensorwise=True) is not None,
                                     reason="torch._scaled_mm with one-element scales does not run on this CPU build")


def test_the_layer_and_the_selector_name_the_same_kernel():
    assert fp8.StaticFp8Linear.kernel == KERNEL_SCALED_MM_FP8


def test_tensor_scale_is_a_one_element_fp32_tensor():
    s = fp8.e4m3_tensor_scale(torch.tensor(896.0))
    assert s.dtype == torch.float32 and s.shape == (1,) and float(s) == 2.0
    assert float(fp8.e4m3_tensor_scale(0.0)) > 0  # an all-zero tensor still gets a usable scale


@needs_scaled_mm
@pytest.mark.parametrize("lead, k, n, bias", [((3, 5), 24, 40, False), ((7,), 16, 32, True), ((2, 1, 4), 33, 7, True)])
def test_static_fp8_linear_matches_its_reference(lead, k, n, bias):
    g = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(n, k, generator=g))
    x = torch.randn(*lead, k, generator=g)
    layer = fp8.StaticFp8Linear.from_linear(linear, x.abs().amax())
    assert layer.qweight.dtype == torch.float8_e4m3fn and layer.qweight.shape == (n, k)
    assert layer.x_scale.shape == (1,) and layer.w_scale.shape == (1,)
    assert float(layer.w_scale) == pytest.approx(float(linear.weight.detach().abs().amax()) / 448)
    y = layer(x)
    assert y.shape == (*lead, n) and y.dtype == x.dtype
    # reference: the same codes widened to float64, times the two per-tensor scales
    xq = (x.reshape(-1, k) / layer.x_scale).clamp(-448, 448).to(torch.float8_e4m3fn).double() * layer.x_scale.double()
    ref = xq @ (layer.qweight.double() * layer.w_scale.double()).t()
    if bias:
        ref = ref + linear.bias.double()
    assert torch.allclose(y.reshape(-1, n).double(), ref, rtol=1e-5, atol=1e-4)
    # and close to the fp32 layer: e4m3 keeps 3 mantissa bits (relative step 1/16) on both operands
    assert (y - linear(x)).abs().max() <= 0.15 * linear(x).abs().max()


@needs_scaled_mm
def test_static_fp8_inputs_past_the_calibrated_amax_saturate():
    linear = torch.nn.Linear(16, 16, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.eye(16))
    layer = fp8.StaticFp8Linear.from_linear(linear, 1.0)
    y = layer(torch.full((1, 16), 5.0))
    # 5 is past amax 1: its code saturates at the e4m3 maximum (448), times the static scale 1/448
    assert torch.allclose(y, torch.ones(1, 16))


def _tiny():
    from .conftest import tiny_llama

    return tiny_llama(hidden=64, layers=2)


@needs_scaled_mm
def test_apply_kernel_fp8_swaps_exactly_the_named_linears_with_calibrated_scales():
    from pytest_genai.quant import uniform_plan

    model = _tiny()
    names = list(uniform_plan(model, "fp8_e4m3").formats)
    tokens = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    amax = kernels.input_amax(model, names, lambda m: m(tokens))
    assert not any(m._forward_pre_hooks for m in model.modules())  # calibration hooks removed
    assert all(v > 0 for v in amax.values())
    with torch.no_grad():
        before = model(tokens).logits
    applied = kernels.apply_kernel(model, names, select_kernel("fp8_e4m3", KernelCaps("cpu", scaled_mm=True)),
                                   calibrate=lambda m: m(tokens))
    assert applied.label == KERNEL_SCALED_MM_FP8 and applied.layers == {n: KERNEL_SCALED_MM_FP8 for n in names}
    swapped = {n for n, m in model.named_modules() if isinstance(m, fp8.StaticFp8Linear)}
    assert swapped == set(names) and "lm_head" not in swapped
    for n in names:
        assert float(model.get_submodule(n).x_scale) == pytest.approx(max(amax[n], 1e-12) / 448)
    with torch.no_grad():
        after = model(tokens).logits
    assert torch.isfinite(after).all() and (after - before).abs().max() < 0.2 * before.abs().max()


def test_apply_kernel_refuses_native_and_uncalibrated_fp8():
    model = _tiny()
    with pytest.raises(ValueError, match="quantize_model"):
        kernels.apply_kernel(model, ["model.layers.0.mlp.up_proj"], select_kernel("int8", KernelCaps("cpu")))
    with pytest.raises(ValueError, match="calibrate"):
        kernels.apply_kernel(model, ["model.layers.0.mlp.up_proj"],
                             select_kernel("fp8_e4m3", KernelCaps("cpu", scaled_mm=True)))


def test_apply_kernel_int8_is_torchao_on_the_named_linears_only():
    pytest.importorskip("torchao.quantization")
    model = _tiny()
    names = ["model.layers.0.mlp.up_proj", "model.layers.1.self_attn.q_proj"]
    applied = kernels.apply_kernel(model, names, select_kernel("int8", KernelCaps("cpu", torchao=True)))
    assert applied.label == KERNEL_TORCHAO_INT8 and applied.model is model
    quantized = {n for n, m in model.named_modules()
                 if isinstance(m, torch.nn.Linear) and type(m.weight).__name__ != "Parameter"}
    assert quantized == set(names)
    with torch.no_grad():
        assert torch.isfinite(model(torch.zeros(1, 4, dtype=torch.long)).logits).all()
