"""Reports, run-to-run comparison and regression gating for pytest-genai results.

Everything here reads pytest-benchmark JSON files whose benchmarks carry the
``extra_info["genai"]`` object of the pytest-genai JSON contract.  Importing this
package imports nothing heavy (no torch, no matplotlib); plots import matplotlib
lazily.
"""
