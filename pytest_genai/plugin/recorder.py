"""The ``genai`` fixture's recorder: fills ``benchmark.extra_info["genai"]`` (the JSON contract) and checks claims."""
from __future__ import annotations

import dataclasses
import statistics
import warnings
from typing import Any, Mapping

import pytest

from pytest_genai import SCHEMA
from pytest_genai.claims.check import FAIL, INCONCLUSIVE, check_value, contended_share, not_applicable
from pytest_genai.stats import Interval, median_interval
from pytest_genai.devices.device import Device
from pytest_genai.claims.model import REPORT_ONLY_BASES, SOURCES
from pytest_genai.progress import logger
from pytest_genai.results.measurement import Measurement, Result  # noqa: F401  (Result: re-exported for benchmarks)
from pytest_genai.results.runs import GENAI_CONTAINERS, benchmark_json, metrics_json, recorded_metrics

_LOG = logger(__name__)
_MODELED_WORDS = ("modeled", "predicted")


def run_source_problems(genai: Mapping[str, Any], registry: Mapping[str, Any]) -> list[str]:
    """Each metric of a benchmark's ``extra_info["genai"]`` whose source breaks :func:`source_problem` or is absent."""
    found = {name: "no source recorded" if m.source is None else
             source_problem(name, m.source, getattr(registry.get(name), "source", None))
             for name, m in recorded_metrics(genai).items()}
    return [f"{name}: {why}" for name, why in found.items() if why]


def source_problem(name: str, source: str, registered: str | None) -> str | None:
    """Why ``source`` cannot label metric ``name`` (None when it can): a modeled number says so in its name and a
    ``*_spec`` number is a datasheet's; a source fixed in the metric registry wins over any other label."""
    if source not in SOURCES:
        return f"source must be one of {SOURCES}, got {source!r}"
    if registered is not None and source != registered:
        return f"the metric registry fixes its source as {registered!r}, not {source!r}"
    says_modeled = any(word in name for word in _MODELED_WORDS)
    if source == "modeled" and not says_modeled:
        return f"a modeled number must say so in its name (e.g. '{name}_modeled')"
    if says_modeled and source != "modeled":
        return f"its name says modeled, so its source must be 'modeled', not {source!r}"
    if name.endswith("_spec") and source != "spec":
        return f"a *_spec name is a datasheet number: source 'spec', not {source!r}"
    if source == "spec" and not name.endswith("_spec") and registered != "spec":
        return f"a datasheet number must say so in its name (e.g. '{name}_spec')"
    return None


def result_problems(result: Any, registry: Mapping[str, Any] | None = None) -> list[str]:
    """What ``genai.record(result)`` would refuse in a :class:`Result`'s metrics (source, unit), for its tests."""
    from pytest_genai.claims import load_metrics

    registry = load_metrics() if registry is None else registry
    found = {name: "not a Measurement with an explicit source" if not isinstance(m, Measurement) or m.source is None
             else "not registered with a unit (claims/data/metrics_*.toml)" if (known := registry.get(name)) is None
             or not known.unit else source_problem(name, m.source, known.source)
             for name, m in result.metrics.items()}
    return [f"{name}: {why}" for name, why in found.items() if why]


def _as_number(value: Any) -> Any:
    """A numpy / torch scalar as a float (as ``genai.metric`` records it); anything else as given, for the verdict."""
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


class GenaiWarning(UserWarning):
    pass


def jsonable(value: Any) -> Any:
    """Plain JSON values from configs: dataclasses, tuples, enums, paths, dtypes → dicts, lists, strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        cid = getattr(value, "id", None)
        if isinstance(cid, str):
            out.setdefault("id", cid)
        return out
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


class GenaiRecorder:
    """Records one benchmark's domain results (see README, "JSON contract")."""

    def __init__(self, request: pytest.FixtureRequest, state: Any):
        from pytest_genai.runtime.pressure import Window

        self._request = request
        self._state = state
        self._device: Device | None = None
        self._data: dict[str, Any] | None = None
        self._measurements: dict[str, Measurement] = {}  # as recorded; the JSON's metric objects derive from them
        # CPU contention over the test, from its setup (benchmarks may measure before genai.start) to genai.record
        self._window = Window.open()
        self._stall_share: float | None = None  # its reading at record() (or check())
        self._reference_registered = False  # the teardown that adds reference verdicts, registered once

    # -- filling ---------------------------------------------------------------------------------------------
    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            raise RuntimeError("call genai.start(experiment=..., device=..., config=...) before recording")
        return self._data

    def start(self, experiment: str | None = None, device: Device | None = None, config: Any = None,
              model: str | None = None, *, measured_here: bool = True) -> "GenaiRecorder":
        """Begin this benchmark's record; ``measured_here=False``: another machine's numbers, so no CPU contention."""
        from pytest_genai.identity import merge_environment, split_config, split_model

        if experiment is None:  # the test file's registered experiment
            from pytest_genai.plugin import _experiment

            found, path = _experiment(self._request.node), getattr(self._request.node, "path", None)
            if found is None:
                raise ValueError(f"genai.start: {path.name if path else 'this test'} is not a registered benchmark "
                                 "file (pytest_genai/experiments.py); pass experiment=...")
            experiment = found.name
        if not experiment or not isinstance(experiment, str):
            raise ValueError("genai.start: 'experiment' must be a non-empty string, e.g. 'quant'")
        if device is None and "genai_device" in getattr(self._request, "fixturenames", ()):
            device = self._request.getfixturevalue("genai_device")
        self._device = device
        data = self._request.getfixturevalue("benchmark").extra_info.setdefault("genai", {})
        # What the benchmark is (config: matched across runs) vs where/how it ran here (environment: paths, threads,
        # rank placement; shown by compare/gate, never matched on) — pytest_genai.identity.
        full = jsonable(config) if config is not None else {}
        split = split_config(full) if isinstance(full, dict) else None
        model, model_env = split_model(model)
        data.update(schema=SCHEMA, experiment=experiment, model=model,
                    device=None if device is None else {"kind": device.kind, "generation": device.generation,
                                                        "name": device.name},
                    config=full if split is None else split.identity,
                    environment=merge_environment(split.environment if split else {}, model_env))
        for key, empty in {**metrics_json({}), **GENAI_CONTAINERS}.items():
            data.setdefault(key, type(empty)())
        self._data = data
        if not measured_here:
            self._window, self._stall_share = None, None
            data["attachments"].pop("cpu_contention", None)
        _LOG.info("%s on %s: recording %s", experiment, self._generation, self._request.node.name)
        self._state.records.append(benchmark_json(self._request.node.name, data, self._request.node.nodeid))
        if not self._reference_registered:  # judged at teardown, when every metric of the record is in
            self._request.addfinalizer(self._check_reference)
            self._reference_registered = True
        return self

    @property
    def _generation(self) -> str:
        return self._device.generation if self._device else "-"

    def record(self, result: Any) -> None:
        """Record a :class:`Result`'s (any object's) ``metrics``, and its ``labels``, ``attachments``, ``sources``."""
        metrics = getattr(result, "metrics", None)
        if not isinstance(metrics, Mapping):
            raise TypeError(f"genai.record: {type(result).__name__} has no 'metrics' mapping")
        sources = getattr(result, "sources", None) or {}
        for name, item in metrics.items():
            m = item if isinstance(item, Measurement) else Measurement(item)
            self.metric(name, m.value, source=m.source or sources.get(name), unit=m.unit, rounds=m.rounds,
                        interval=m.interval)
        for field, put in (("labels", self.label), ("attachments", self.attach)):
            for name, obj in (getattr(result, field, None) or {}).items():
                put(name, obj)
        self._read_contention()

    def _read_contention(self) -> float | None:
        """CPU contention from the test's setup to now (attachment ``cpu_contention``); its share, or None."""
        reading = self._window.reading() if self._window is not None else None
        if reading is None:
            return None
        self.data["attachments"]["cpu_contention"] = reading
        self._stall_share = reading["stall_share_measured"]
        return self._stall_share

    def metric(self, name: str, value: float, *, source: str | None = None, unit: str | None = None,
               rounds: Any = None, interval: Interval | None = None) -> float:
        """Record a number (``source``: by default the registry's, else from its name; ``rounds``: each round's)."""
        known = self._state.metrics().get(name)
        registered = known.source if known is not None else None
        if source is None:
            source = registered or ("spec" if name.endswith("_spec") else
                                    "modeled" if any(w in name for w in _MODELED_WORDS) else "measured")
        problem = source_problem(name, source, registered)
        if source == "reference":  # published numbers live in reference runs, beside the session's, never in them
            problem = ("'reference' labels a vendor's published number (`pytest-genai reference runs`); record what "
                       "this test measured, and let the published row's reference verdict compare the two")
        if problem:
            raise ValueError(f"genai.metric({name!r}): {problem}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)  # numpy / torch scalars
            except (TypeError, ValueError):
                raise TypeError(f"genai.metric({name!r}): value must be a number, got {type(value).__name__}") from None
        if known is None:
            warnings.warn(GenaiWarning(f"metric {name!r} is not registered in any claims/data/metrics_*.toml"), stacklevel=2)
        elif unit and known.unit and unit != known.unit:
            # reports show, and comparisons gate, a registered metric in its registered unit: "5 ms" recorded under
            # a metric registered in seconds would be read as 5 s and compared 1000x off
            raise ValueError(f"genai.metric({name!r}): unit {unit!r} contradicts the registered unit "
                             f"{known.unit!r} (claims/data/metrics_*.toml); record the value in {known.unit!r}, or "
                             "under a metric registered in that unit")
        value = float(value) if isinstance(value, float) or not isinstance(value, int) else int(value)
        rounds = None if rounds is None else tuple(float(r) for r in rounds)
        if interval is None and rounds is not None and len(rounds) >= 2:
            interval = median_interval(rounds)
        self._measurements[name] = Measurement(value, source, unit or (known.unit if known else ""), rounds, interval)
        self.data.update(metrics_json(self._measurements))
        return value

    def label(self, name: str, text: str) -> None:
        self.data["labels"][name] = str(text)

    def attach(self, name: str, obj: Any) -> None:
        self.data["attachments"][name] = jsonable(obj)

    # -- rounds ----------------------------------------------------------------------------------------------
    @property
    def rounds_policy(self) -> Any:
        """This session's ``RoundsPolicy`` (``--genai-rounds``, ``--genai-time-budget``), with :meth:`decided`."""
        from pytest_genai.plugin.options import resolve
        from pytest_genai.runtime.rounds import FIXED, RoundsPolicy

        config = self._request.config
        return RoundsPolicy(mode=resolve(config, "rounds") or FIXED, budget_s=resolve(config, "time_budget"))

    def decided(self, metric: str, rounds: Any, *claim_ids: str) -> bool:
        """Would more rounds of ``metric`` change nothing? Not while a claim on it (or the baseline's gate row, else
        the metric's gate threshold) reads inconclusive on these rounds; CPU contention is left out."""
        values = [float(r) for r in rounds]
        if len(values) < 2:
            return False
        claims = self._state.claims()
        ids = claim_ids or tuple(cid for cid in self._declared() if cid in claims and claims[cid].metric == metric)
        data, median, interval = self.data, statistics.median(values), median_interval(values)
        if any(self._applies(claims[cid])[0] and check_value(claims[cid], median, interval).verdict == INCONCLUSIVE
               for cid in ids):
            return False
        baseline = self._request.config.pluginmanager.get_plugin("genai-baseline")
        undecided = None if baseline is None else baseline.gate_undecided(self._request.node.name, data, metric, values)
        if undecided is not None:
            return not undecided
        # no baseline row to decide: precise enough that a later gate at the metric's threshold can decide
        from pytest_genai.report.thresholds import Thresholds, precise_for_gate

        known = self._state.metrics().get(metric)
        limit = Thresholds().for_metric(metric, data.get("experiment"), known.max_regression if known else None)
        return precise_for_gate(values, limit)

    def note_rounds(self, metric: str, outcome: Any) -> None:
        """Record how the rounds behind ``metric`` were taken (a ``RoundsOutcome``) in the JSON's ``rounds``."""
        self.data.setdefault("rounds", {})[metric] = outcome.to_json()

    # -- claims ----------------------------------------------------------------------------------------------
    def _declared(self) -> list[str]:
        """The claim ids of this test's ``@pytest.mark.claims(...)``."""
        return [cid for mark in self._request.node.iter_markers("claims") for cid in mark.args]

    def _applies(self, claim: Any) -> tuple[bool, str]:
        """Whether ``claim``'s scope holds this record, and why not."""
        device, data = self._device, self.data
        return claim.applies_to(device_kind=device.kind if device else None,
                                generation=device.generation if device else None, model=data.get("model"),
                                experiment=data.get("experiment"), config=data.get("config"))

    def _tally(self, verdict: Any, entry: Mapping[str, Any], stall: float | None) -> None:
        """A verdict for the closing table, with the stall share where it made a timing verdict inconclusive."""
        self._state.verdicts.append({**entry, "device": self._generation, "nodeid": self._request.node.nodeid,
                                     "cpu_stall": stall})
        _LOG.info("claim %s: %s", verdict.id, verdict.message)

    def check(self, *claim_ids: str, value: float | None = None) -> list[Any]:
        """Check claims by id against their metrics (or ``value``); failures fail the test together, unless report."""
        if not claim_ids:
            raise ValueError("genai.check needs at least one claim id")
        if value is not None and len(claim_ids) != 1:
            raise ValueError("genai.check(value=...) takes exactly one claim id")
        claims, data = self._state.claims(), self.data
        # checked without genai.record: the window up to now
        stall_share = self._read_contention() if self._stall_share is None else self._stall_share
        declared = set(self._declared())
        verdicts = []
        for cid in claim_ids:
            claim = claims.get(cid)
            if claim is None:
                raise ValueError(f"unknown claim id {cid!r}; known ids: {', '.join(sorted(claims))}")
            if cid not in declared:
                raise ValueError(f"claim {cid} is checked but not declared: add it to this test's "
                                 f"@pytest.mark.claims(...) so claim coverage (pytest-genai claims --coverage) sees it")
            ok, why = self._applies(claim)
            if not ok:
                verdicts.append(not_applicable(claim, why))
                continue
            recorded = self._measurements.get(claim.metric)
            if value is None and recorded is None:
                raise ValueError(
                    f"claim {cid} checks metric {claim.metric!r}, which this test has not recorded (recorded: "
                    f"{', '.join(sorted(self._measurements)) or 'none'}); call genai.metric({claim.metric!r}, ...) first")
            # a value not yet recorded is recorded first: a numpy / torch scalar made a float, as recorded
            measured = (recorded.value if value is None else self.metric(claim.metric, value) if recorded is None
                        else _as_number(value))
            verdicts.append(check_value(claim, measured, recorded.interval if value is None else None,
                                        stall_share=stall_share))
        for verdict in verdicts:
            entry = verdict.to_json()
            data["claims"].append(entry)
            if verdict.verdict == "not_applicable":
                self._state.not_applicable += 1
            else:
                self._tally(verdict, entry, contended_share(data["attachments"]) if claims[verdict.id].timing else None)
        failures = [v.message for v in verdicts if failing(v.verdict, v.basis, self._state.claims_mode)]
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
        return verdicts

    def _check_reference(self) -> None:
        """Add (replacing) the ``reference`` verdicts of a published row with this benchmark's identity."""
        from pytest_genai.plugin.options import resolve
        from pytest_genai.plugin.reference_verdicts import reference_verdicts

        data = self.data
        extra = resolve(self._request.config, "reference_rows") or ""
        for verdict in reference_verdicts(data, self._request.node.nodeid, self._stall_share, extra):
            entry = verdict.to_json()
            data["claims"][:] = [c for c in data["claims"] if c.get("id") != verdict.id] + [entry]
            self._tally(verdict, entry, contended_share(data["attachments"]))


def failing(verdict: str, basis: str, mode: str) -> bool:
    """Does this verdict fail its test? ``report``: never; ``enforce``: a failed claim; ``strict``: also an
    inconclusive one. A missed ``target`` or ``reference`` claim is recorded and shown, never a failure."""
    if mode == "report" or basis in REPORT_ONLY_BASES:
        return False
    return verdict == FAIL or (mode == "strict" and verdict == INCONCLUSIVE)
