"""The results spine: what a benchmark measured, as one typed chain, and the only code that writes or reads the
``extra_info["genai"]`` object of pytest-genai's JSON contract.

* :mod:`.measurement` — :class:`~.measurement.Measurement`: one number with its source, unit, rounds and interval;
* :mod:`.runs` — :class:`~.runs.Record` (one benchmark's metrics) and :class:`~.runs.Run` (a session's records), read
  from a pytest-benchmark JSON document;
* :mod:`.registry` — what a metric is (unit, direction, threshold) and the unit table;
* :mod:`.storage` — pytest-benchmark's own storage (``.benchmarks``), :mod:`.baselines` — N runs as one baseline;
* :mod:`.renames` — old metric names read as today's, :mod:`.errors` — the one input error and the exit codes.

The ground floor of the results half: it imports no other pytest-genai package but the root's helpers.
"""
