"""Compositions of two experiments: the one package (besides ``benchmarks/``) allowed to import two experiment
packages. An experiment package imports the core, :mod:`pytest_genai.runtime` and itself only
(``tests/test_architecture.py`` checks it); what needs two of them lives here.

- ``quantized_eval``   Paper A, A1: quantize an evaluation model with ``quant`` (sensitivity, two-tier plan, fake or
  real), then evaluate it with ``evals`` (``benchmarks/test_quantization.py``)
- ``quality_result``   what a row of that benchmark records (the evaluation, the quantization, the comparison with
  fp32) as a Result (pure)
- ``quant_properties`` the quantizer's properties as a reusable test class, run on a pretrained model that
  ``evals.models`` resolves and loads (``--genai-model``, else the embedded SmolLM2-135M)
"""
