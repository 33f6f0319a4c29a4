"""A STAND-IN for the Intel Gaudi PyTorch bridge, for CI on the CPU: not the real ``habana_frameworks``.

It lives under tests/ and is put on PYTHONPATH only by scripts/gaudi_leg.sh, so optimum-habana, neural-compressor and
this project's Gaudi paths import and run their host-side code on a machine without a Gaudi card. It implements only
the surface those touch (``torch.core.mark_step``, ``torch.hpu`` availability and memory counters,
``torch.utils.internal.is_lazy``, ``torch.hpex.kernels.FusedSDPA`` through torch's SDPA) and reports no HPU
(``torch.hpu`` says when it does), so nothing here claims a kernel, graph compilation, HCCL or a card ran. Never
shipped (pyproject's package discovery includes only pytest_genai*).
"""
STANDIN = True
