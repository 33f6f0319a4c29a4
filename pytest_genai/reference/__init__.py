"""Published reference measurements (vendors' CI baselines and performance tables) as runs and claims.

* :mod:`.row` — a published number with its identity, stated settings, unstated ones and provenance;
* :mod:`.optimum_habana`, :mod:`.nemo` — one reader per source; :mod:`.sources` — the shipped copies;
* :mod:`.runs` — rows as pytest-benchmark JSON runs (metric source ``reference``), one per device generation;
* :mod:`.generations` — the papers' generation claims judged on those runs by the gate's own code;
* :mod:`.claims` — ``reference`` claims: a user's run against the published number for its configuration.
"""
