"""The results store: a database of runs (SQLite by default, any SQLAlchemy URL for a shared server).

One module per job: :mod:`.location` (which database), :mod:`.schema` (tables and versioned migrations),
:mod:`.engine` (opening a store: SQLite WAL and retries, schema checks), :mod:`.ingest` (a pytest-benchmark JSON
document as rows: pure), :mod:`.write` (adding runs, idempotent and transactional), :mod:`.read` (queries: a
stored run back as a :class:`pytest_genai.results.runs.Run`, metric series). The ``pytest-genai history`` and ``pytest-genai store``
commands live in :mod:`pytest_genai.cli`, above this package and :mod:`pytest_genai.report`, which never import each
other. Part of the core: it imports no experiment package,
and importing it imports no SQLAlchemy (that happens when a store is opened).
"""
