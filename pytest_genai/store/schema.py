"""The store's tables (SQLAlchemy Core, the same on SQLite and PostgreSQL) and their versioned migrations: opening a
store upgrades an older ``store_meta.schema_version``, and refuses a newer one (an unknown layout is never written)."""
from __future__ import annotations

from typing import Any, Callable

SCHEMA_VERSION = 1
MIGRATIONS: dict[int, Callable[[Any], None]] = {}  # n -> step upgrading version n to n + 1 in the transaction


def tables() -> Any:
    """The ``MetaData`` holding every table (built on call: importing this module needs no SQLAlchemy)."""
    from sqlalchemy import (Boolean, Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text,
                            UniqueConstraint)

    md = MetaData()
    Table("store_meta", md,
          Column("key", String(64), primary_key=True),
          Column("value", Text, nullable=False))
    Table("runs", md,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("content_hash", String(64), nullable=False, unique=True),
          Column("run_time", String(40)),  # ISO 8601 UTC, as pytest-benchmark's 'datetime' (sorts as text)
          Column("added_time", String(40), nullable=False),
          Column("commit_id", String(64)),
          Column("commit_time", String(40)),
          Column("commit_dirty", Boolean),
          Column("branch", String(255)),
          Column("command", Text),
          *(Column(name, String(40)) for name in ("json_schema", "pytest_benchmark_version")),
          *(Column(name, String(16)) for name in ("claims_mode", "scale")),
          Column("node", String(255)),
          *(Column(name, Text) for name in ("source", "stack_json", "settings_json", "absent_json")))
    Table("devices", md,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("kind", String(16), nullable=False),
          Column("generation", String(64), nullable=False),
          Column("name", String(255), nullable=False),
          UniqueConstraint("kind", "generation", "name", name="uq_devices_identity"))
    Table("run_devices", md,
          Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
          Column("position", Integer, primary_key=True),
          Column("device_id", Integer, ForeignKey("devices.id"), nullable=False),
          Column("spec_source", Text),
          Column("spec_json", Text))
    Table("benchmarks", md,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
          Column("position", Integer, nullable=False),
          Column("name", Text, nullable=False),
          Column("fullname", Text),
          Column("param", Text),
          Column("experiment", String(64)),
          Column("model", String(255)),
          Column("config_id", String(255)),
          *(Column(f"{k}_json", Text) for k in ("config", "environment", "labels", "attachments", "timing")),
          Column("device_id", Integer, ForeignKey("devices.id")),
          Index("ix_benchmarks_run", "run_id"),
          Index("ix_benchmarks_identity", "experiment", "model", "config_id"))
    Table("metrics", md,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("benchmark_id", Integer, ForeignKey("benchmarks.id", ondelete="CASCADE"), nullable=False),
          Column("name", String(128), nullable=False),
          Column("value", Float),  # NULL when not finite: SQLite has no NaN
          Column("nonfinite", String(8)),  # 'nan', 'inf', '-inf' for those values
          Column("unit", String(32)),
          Column("source", String(16)),
          Column("rounds_json", Text),  # every round's value, where recorded (metric_rounds; stats.data for timing)
          Column("interval_json", Text),
          Index("ix_metrics_name", "name"),
          Index("ix_metrics_benchmark", "benchmark_id"))
    Table("claims", md,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
          Column("benchmark_id", Integer, ForeignKey("benchmarks.id", ondelete="CASCADE")),
          Column("claim_id", String(128), nullable=False),
          Column("metric", String(128)),
          *(Column(name, Float) for name in ("measured", "bound_min", "bound_max", "paper")),
          *(Column(name, String(16)) for name in ("verdict", "basis")),
          Column("message", Text),
          Column("interval_json", Text),
          Index("ix_claims_run", "run_id"))
    return md
