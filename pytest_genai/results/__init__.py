"""The results spine: what a benchmark measured, as one typed chain, and the only code that writes or reads the
``extra_info["genai"]`` object of pytest-genai's JSON contract.

:mod:`.measurement` (one number with its source, unit, rounds and interval), :mod:`.runs` (a run file's records),
:mod:`.registry` (what a metric is; units), :mod:`.storage` (pytest-benchmark's ``.benchmarks``), :mod:`.baselines`
(N runs as one baseline), :mod:`.renames` (old metric names), :mod:`.errors` (the input error, the exit codes).
The ground floor of the results half: it imports no other pytest-genai package but the root's helpers.
"""
