"""``--genai-baseline prev.json``: compare each benchmark's metrics with a previous run's, as ``pytest-genai gate``
does, after its call phase passes; a regression fails the test, an undecided row is listed, never a failure."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import statistics
from dataclasses import dataclass
from typing import Any, Mapping

import pytest

from pytest_genai.report.compare import FAILING, INCONCLUSIVE, UNITS_DIFFER, MetricComparison, compare_records
from pytest_genai.report.deltas import worsening
from pytest_genai.report.gate import interval_text
from pytest_genai.results.errors import ReportInputError
from pytest_genai.report.matching import check_unique, match_records
from pytest_genai.results.registry import MetricInfo
from pytest_genai.claims import default_metric_info, known_experiments
from pytest_genai.results.measurement import Measurement
from pytest_genai.results.runs import (BENCH_STATS_FIELDS, Record, benchmark_json, genai_of, load_run, metrics_json,
                                       recorded_metrics, records_from_benchmarks)
from pytest_genai.tables import format_change, format_number, make_table
from pytest_genai.report.run_noise import measured as measured_run_noise
from pytest_genai.report.thresholds import ThresholdError, parse_thresholds


@dataclass(frozen=True)
class InlineResult:
    nodeid: str
    record: Record
    baseline: Record | None
    metrics: tuple[MetricComparison, ...]

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        return tuple(m for m in self.metrics if m.status in FAILING)

    @property
    def inconclusive(self) -> tuple[MetricComparison, ...]:
        return tuple(m for m in self.metrics if m.status == INCONCLUSIVE)


def regression_message(result: InlineResult, baseline_source: str) -> str:
    """The failure text of a regressed benchmark: one line per regressed metric, no traceback."""
    lines = [f"genai baseline: {result.record.label} regressed against {baseline_source}"]
    for m in result.regressions:
        unit = f" {m.unit}" if m.unit else ""
        if m.status == UNITS_DIFFER:
            lines.append(f"  {m.metric}: {m.note}")
        elif m.status == "regressed":
            limit = f"limit {m.max_regression * 100:g}%, {m.direction} is better"
            judged = (f"; {interval_text(m)} wholly past the limit" if m.interval
                      else f"; {m.note or m.basis + ' comparison'}")
            lines.append(f"  {m.metric}: {format_number(m.baseline)} -> {format_number(m.current)}{unit} "
                         f"({format_change(m.change)}; {limit}{judged})")
        else:
            lines.append(f"  {m.metric}: {format_number(m.baseline)} -> {m.current}{unit} (not a finite number)")
    return "\n".join(lines)


def _stats_dict(bench: Any) -> dict[str, float] | None:
    """The round-time statistics a field:N% threshold may name (pytest-benchmark's Stats attributes)."""
    stats = getattr(getattr(bench, "stats", None), "stats", None)  # None: each getattr below fails, so None back
    out: dict[str, Any] = {}
    for name in BENCH_STATS_FIELDS:
        with contextlib.suppress(AttributeError, TypeError, ValueError, ZeroDivisionError):  # too few rounds: iqr
            out[name] = float(getattr(stats, name))
    data = getattr(stats, "data", None)  # every round's time: the median round time is then judged on its interval
    if out and isinstance(data, (list, tuple)) and len(data) >= 2:
        out["data"] = [float(x) for x in data]
    return out or None


def _baseline_file(config: Any, path: str) -> str:
    """``path``, or the pytest-benchmark storage run (``0003``, ``latest``) it names where no such file exists; never
    the file --benchmark-json names, which this run would overwrite."""
    from pytest_genai.plugin.outputs import STDOUT, benchmark_json_path, same_path
    from pytest_genai.results.storage import is_storage_id, machine_id, resolve_storage_id

    if config is None:  # built outside a pytest session (tests): no options, no --benchmark-json
        return path
    raw, cwd = config.getoption("genai_baseline", None), config.invocation_params.dir
    if isinstance(raw, str) and is_storage_id(raw) and not os.path.isfile(path):
        path = str(resolve_storage_id(raw, config.getoption("benchmark_storage", None), machine_id(), cwd))
    out = benchmark_json_path(config.getoption("benchmark_json", None), cwd)
    if out not in (None, STDOUT) and same_path(out, path):
        raise pytest.UsageError(f"--genai-baseline {path}: is the same file as --benchmark-json {out}; this "
                                "run would overwrite its own baseline — write the new run to another path")
    return path


class BaselinePlugin:
    """Registered by the plugin as ``BaselinePlugin(config, baseline_path, thresholds_text)``."""

    def __init__(self, config: pytest.Config, baseline_path: str, thresholds_text: str | None = None,
                 info: Mapping[str, MetricInfo] | None = None, run_noise: Any = None) -> None:
        self.config = config
        try:
            baseline_path = _baseline_file(config, baseline_path)
            self.baseline = load_run(baseline_path)
            # a baseline file is one run: launches of the same code move it by the measured run noise
            self.thresholds = dataclasses.replace(parse_thresholds(thresholds_text, option="--genai-max-regression"),
                                                  run_noise=run_noise or measured_run_noise())
            if not self.baseline.records:
                raise pytest.UsageError(f"--genai-baseline: {baseline_path}: the baseline run contains no benchmarks")
            self.warnings: list[str] = list(self.baseline.warnings)
            if info is None:
                info, warning = default_metric_info()
                self.warnings.extend([warning] if warning else [])
            self.info = info
            check_unique(self.baseline)  # two baseline benchmarks that cannot be told apart would match nothing
            # names are checked against the registry and the baseline (this run's metrics are not known yet)
            metrics = set(info) | {m for r in self.baseline.records for m in r.metrics}
            self.thresholds.check_known(metrics, known_experiments(self.baseline.records),
                                        option="--genai-max-regression")
        except (ReportInputError, ThresholdError) as exc:
            raise pytest.UsageError(f"--genai-baseline: {exc}") from None
        self.results: list[InlineResult] = []

    def compare_item(self, nodeid: str, name: str, bench: Any) -> InlineResult | None:
        """Compare one benchmark fixture's genai metrics with the baseline; None when it recorded none."""
        genai = genai_of(bench)
        if genai is None:
            return None
        try:
            record, base = self._paired(benchmark_json(name, genai, nodeid, stats=_stats_dict(bench)))
        except ReportInputError as exc:
            self.warnings.append(f"{nodeid}: not compared with the baseline: {exc}")
            return None
        metrics = compare_records(base, record, self.info, self.thresholds) if base is not None else ()
        result = InlineResult(nodeid, record, base, metrics)
        self.results.append(result)
        return result

    def _paired(self, bench: Mapping[str, Any]) -> tuple[Record, Record | None]:
        """This run's record of a benchmark entry and the baseline's it matches (None for none)."""
        (record,) = records_from_benchmarks([bench], "this run")
        return record, next((p.baseline for p in match_records(self.baseline.records, [record]).pairs), None)

    def gate_undecided(self, name: str, genai: Mapping[str, Any], metric: str, rounds: list[float]) -> bool | None:
        """Would the gate row for ``metric`` read inconclusive on ``rounds`` in a way more rounds could change? None
        where the baseline has no counterpart or no rounds for it."""
        was = recorded_metrics(genai).get(metric)
        now = Measurement(statistics.median(rounds), (was and was.source) or "measured", was and was.unit,
                          tuple(rounds))
        data = {**genai, **metrics_json({metric: now}), "attachments": {}, "claims": []}
        try:
            record, base = self._paired(benchmark_json(name, data))
        except ReportInputError:
            return None
        if base is None or len(base.rounds.get(metric, ())) < 2:
            return None
        rows = [m for m in compare_records(base, record, self.info, self.thresholds) if m.metric == metric]
        if not rows or rows[0].status != INCONCLUSIVE:
            return False
        return float((rows[0].interval or {}).get("launch_share", 0.0)) <= 0.5

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if call.when != "call" or not report.passed:
            return report
        bench = getattr(item, "funcargs", {}).get("benchmark")
        result = None if bench is None else self.compare_item(item.nodeid, item.name, bench)
        if result is not None and result.regressions:
            report.outcome = "failed"
            report.longrepr = regression_message(result, self.baseline.source)
        return report

    def summary_table(self) -> str:
        rows = []
        for r in self.results:
            if r.baseline is None:
                rows.append([r.nodeid, "—", "0", "—", "no match in baseline"])
                continue
            gated = [m for m in r.metrics if m.baseline is not None and m.current is not None
                     and m.change is not None and not math.isnan(m.change) and m.direction in ("higher", "lower")]
            worst = max(gated, key=lambda m: worsening(m.baseline, m.current, m.direction), default=None)
            worst_text = "—" if worst is None else f"{worst.metric} {format_change(worst.change)}"
            regressed = ", ".join(m.metric for m in r.regressions)
            undecided = ", ".join(m.metric for m in r.inconclusive)
            status = (f"REGRESSED: {regressed}" if regressed else "ok") + (
                f"; inconclusive: {undecided}" if undecided else "")
            device = r.baseline.device.generation if r.baseline.device else "—"
            rows.append([r.nodeid, device, str(len(r.metrics)), worst_text, status])
        return make_table(["benchmark", "baseline device", "metrics", "largest worsening", "status"], rows,
                          [False, False, True, False, False]).to_markdown()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        tr.write_sep("-", f"genai baseline: {self.baseline.source} (thresholds: {self.thresholds.id})")
        for warning in self.warnings:
            tr.write_line(f"warning: {warning}")
        if not self.results:
            tr.write_line("no benchmark recorded genai metrics; nothing compared")
            return
        for line in self.summary_table().splitlines():
            tr.write_line(line)
        failed = sum(1 for r in self.results if r.regressions)
        unmatched = sum(1 for r in self.results if r.baseline is None)
        undecided = sum(len(r.inconclusive) for r in self.results)
        tr.write_line(f"{len(self.results)} benchmark(s) compared, {failed} regressed, {unmatched} without a baseline match"
                      + (f", {undecided} metric(s) inconclusive (their rounds' interval straddles the threshold, or "
                         "the machine was contended): not failures" if undecided else ""))
