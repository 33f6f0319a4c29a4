"""The results store: a database of runs (SQLite by default, any SQLAlchemy URL for a shared server).
Never imports :mod:`pytest_genai.report` (the commands live in :mod:`pytest_genai.cli`), nor SQLAlchemy until opened."""
