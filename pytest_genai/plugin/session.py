"""The run's state, kept in ``config.stash``: detected devices, claims, verdicts and records."""
from __future__ import annotations

import dataclasses
from typing import Any

from pytest_genai.devices.device import ENABLE_HINTS, Device
from pytest_genai.devices.probes import PROBES, DeviceBroken, ProbeResult, broken_message, run_probe, skip_reason


@dataclasses.dataclass
class SessionState:
    config: Any
    claims_mode: str = "enforce"
    selected_kinds: tuple[str, ...] = ()
    _probe_results: dict[str, ProbeResult] | None = None
    _devices: dict[str, Device] = dataclasses.field(default_factory=dict)
    _claims: dict[str, Any] | None = None
    _metrics: dict[str, Any] | None = None
    verdicts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    not_applicable: int = 0  # out-of-scope claim checks (recorded in each benchmark's JSON, not in the table)
    records: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    test_wall_s: dict[str, float] = dataclasses.field(default_factory=dict)  # nodeid -> setup + call + teardown
    _stack: dict[str, Any] | None = None

    # -- devices ---------------------------------------------------------------------------------------------
    def probe_results(self) -> dict[str, ProbeResult]:
        """Run every probe once per session (lazily: only when a device is needed)."""
        if self._probe_results is None:
            probes = dict(PROBES)
            self.config.hook.pytest_genai_probes(config=self.config, probes=probes)
            self._probe_results = {kind: run_probe(kind, probe) for kind, probe in probes.items()}
        return self._probe_results

    def skip_reason(self, kind: str) -> str | None:
        """Why tests needing ``kind`` skip at collection, or None (a broken kind errors in its fixture instead)."""
        result = self.probe_results().get(kind)
        if result is None:
            return f"{kind}: no probe registered"
        return None if result.available or result.broken else skip_reason(result)

    def required_problems(self, kinds: tuple[str, ...]) -> list[str]:
        """One line per required kind that is absent or broken, naming why."""
        results = self.probe_results()
        return [f"{kind} is required but has no probe registered" if r is None else
                f"{kind} is required but broken ({r.error}); repair the driver or SDK installation "
                "(`pytest-genai devices` reruns the probe)" if r.broken else
                f"{kind} is required but absent ({r.reason}); to enable: {ENABLE_HINTS[kind]}"
                for kind, r in zip(kinds, map(results.get, kinds)) if r is None or r.broken or not r.available]

    def broken(self) -> dict[str, str]:
        """Kind -> the probe's error, for the kinds whose probe failed; empty when no probe has run yet."""
        return {kind: r.error for kind, r in (self._probe_results or {}).items() if r.error is not None}

    def device(self, kind: str) -> Device:
        """The first device of ``kind`` (the CPU's spec measured once); raises :class:`DeviceBroken` or LookupError."""
        if kind not in self._devices:
            result = self.probe_results().get(kind)  # None: a pytest_genai_probes hook removed it
            if result is not None and result.broken:
                raise DeviceBroken(broken_message(result))
            if result is None or not result.devices:
                raise LookupError(self.skip_reason(kind))
            device = result.devices[0]
            if device.kind == "cpu" and device.spec is None:
                from pytest_genai.devices.cpu_probe import measure_cpu_spec

                device = dataclasses.replace(device, spec=measure_cpu_spec())
            self._devices[kind] = device
        return self._devices[kind]

    def machine_info(self) -> dict[str, Any]:
        results = self.probe_results()
        found = [d.to_json() for result in results.values() if result.available for d in result.devices]
        absent = {kind: result.reason for kind, result in results.items() if not result.available}
        for entry in found:  # the CPU's measured spec, if it was measured this session
            dev = self._devices.get(entry["kind"])
            if dev is not None and dev.index == entry["index"] and dev.spec is not None:
                entry["spec"] = dev.spec.to_json()
        return {"devices": found, "absent": absent, "broken": self.broken(), "stack": self.stack()}

    def stack(self) -> dict[str, Any]:
        """The software stack (:mod:`pytest_genai.stack`), collected once."""
        if self._stack is None:
            from pytest_genai.stack import collect_stack

            cuda = self.probe_results().get("cuda")
            self._stack = collect_stack(cuda_available=bool(cuda and cuda.available))
        return self._stack

    # -- claims ----------------------------------------------------------------------------------------------
    def claims(self) -> dict[str, Any]:
        if self._claims is None:
            from pytest_genai.claims import load_claims

            self._claims = {c.id: c for c in load_claims()}
        return self._claims

    def metrics(self) -> dict[str, Any]:
        if self._metrics is None:
            from pytest_genai.claims import load_metrics

            self._metrics = load_metrics()
        return self._metrics
