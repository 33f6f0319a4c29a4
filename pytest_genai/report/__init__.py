"""Reports, run-to-run comparison and regression gating for pytest-genai results.

They read pytest-benchmark JSON files whose benchmarks carry the ``extra_info["genai"]`` object of the JSON contract.
Importing this package imports nothing heavy (no torch, no matplotlib); plots import matplotlib lazily."""
