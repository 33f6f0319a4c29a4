"""Energy of measured work, where the device reports it: hardware choice needs performance per watt (MLPerf Power;
optimum-benchmark records energy too).

- NVIDIA: NVML's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver
  loaded, Volta and newer). The counter moves in steps (the board's power times its update period), so a short round
  read alone is noise: :func:`per_call_j` times windows of many calls that start and end on the counter's steps.
- Intel Gaudi: no cumulative counter; the board power (``hl-smi -Q power.draw``, watts, or pyhlml's
  ``hlmlDeviceGetPowerUsage`` in milliwatts) is sampled in a thread while the round runs and integrated over time
  (trapezoids).
- Elsewhere (the CPU here, the dataflow kinds): no meter, and the benchmark records no energy at all: absent, never 0.

Every figure is ``measured``. Readers are injectable, so the arithmetic is tested with fakes on the CPU. A meter
that faults (``N/A``, a reading that is not a finite number, a reader that raises) leaves energy absent with its
reason (:class:`MeterFault`, a warning, ``meter.fault``); the benchmark is kept.
"""
from __future__ import annotations

import math
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

#: Seconds between power samples where power is integrated (hl-smi answers in tens of milliseconds).
SAMPLE_INTERVAL_S = 0.05
#: The shortest window of repeated calls whose energy is read (counter steps and power samples come every 10-100 ms).
WINDOW_S = 0.5
#: Longest wait for a counter to step; one that does not move in this long reports nothing (absent, never 0).
STEP_WAIT_S = 2.0


class MeterFault(RuntimeError):
    """A meter reading that is no number of joules or watts; energy is then absent, never a wrong figure."""


class EnergyAbsent(UserWarning):
    """An energy meter faulted during a benchmark: its energy is not recorded (the message says why)."""


def _reading(value: Any, what: str) -> float:
    """``value`` as a finite, non-negative number, else :class:`MeterFault` naming ``what`` answered it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise MeterFault(f"{what} answered {str(value)[:60]!r}, not a number") from None
    if not math.isfinite(number) or number < 0:
        raise MeterFault(f"{what} answered {number}, not a finite, non-negative number")
    return number


def _read(read: Callable[[], float], what: str) -> float:
    """One reading; any error of the reader (a driver error, a timeout) as a :class:`MeterFault`."""
    try:
        return _reading(read(), what)
    except MeterFault:
        raise
    except Exception as exc:  # the reader's own error type (NVML, hl-smi's exit status, a timeout)
        raise MeterFault(f"{what} failed: {type(exc).__name__}: {exc}") from None


@dataclass
class CounterMeter:
    """A meter over a cumulative energy counter: ``read_j()`` returns joules since some fixed origin."""

    read_j: Callable[[], float]
    method: str
    fault: str | None = None
    """Why the last :func:`per_call_j` recorded no energy, when the meter faulted."""

    def read(self) -> float:
        return _read(self.read_j, self.method)

    def measure(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        before = self.read()
        out = fn()
        return out, self.read() - before


@dataclass
class PowerMeter:
    """A meter that integrates sampled power: ``read_w()`` returns watts now."""

    read_w: Callable[[], float]
    method: str
    interval_s: float = SAMPLE_INTERVAL_S
    clock: Callable[[], float] = field(default=time.perf_counter)
    fault: str | None = None
    """Why the last :func:`per_call_j` recorded no energy, when the meter faulted."""

    def read(self) -> float:
        return _read(self.read_w, self.method)

    def measure(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        """``fn()`` and the joules it took; :class:`MeterFault` (after ``fn`` ran) when a sample faulted: a gap in
        the samples would be integrated as if the power had stayed between its ends."""
        samples: list[tuple[float, float]] = [(self.clock(), self.read())]
        stop = threading.Event()
        faults: list[MeterFault] = []

        def sample() -> None:
            while not stop.wait(self.interval_s):
                try:
                    samples.append((self.clock(), self.read()))
                except MeterFault as exc:  # in the thread it was a traceback, and the gap integrated silently
                    faults.append(exc)
                    return

        thread = threading.Thread(target=sample, name="genai-power", daemon=True)
        thread.start()
        try:
            out = fn()
        finally:
            stop.set()
            thread.join()
        if faults:
            raise faults[0]
        samples.append((self.clock(), self.read()))
        return out, integrate_j(samples)


def _next_step(read_j: Callable[[], float], clock: Callable[[], float], wait_s: float
               ) -> tuple[float, float] | None:
    """Polls the counter until it moves: (the new reading, when it was seen), or None after ``wait_s``."""
    first, start = read_j(), clock()
    while True:
        now, at = read_j(), clock()
        if now != first:
            return now, at
        if at - start > wait_s:
            return None


def per_call_j(fn: Callable[[], Any], meter: CounterMeter | PowerMeter | None, *, windows: int = 3,
               min_s: float = WINDOW_S, clock: Callable[[], float] = time.perf_counter,
               step_wait_s: float = STEP_WAIT_S) -> list[float]:
    """Joules per call of ``fn``, one figure per window of at least ``min_s`` seconds of back-to-back calls (``fn``
    ends with the device synchronized). On a counter, a window opens on one step of the counter and its calls go on
    until the first step after ``min_s``: the calls between two steps hold all the energy the counter added, give or
    take the call running at each step, so the error is about one call's worth rather than a whole step. Sampled
    power is integrated over the window. Empty without a meter, or where a counter does not move; empty too when the
    meter faults (``N/A``, a reading that is no finite number), with the reason in ``meter.fault`` and an
    :class:`EnergyAbsent` warning."""
    if meter is None:
        return []
    meter.fault = None
    try:
        return _per_call_j(fn, meter, windows, min_s, clock, step_wait_s)
    except MeterFault as exc:
        meter.fault = f"energy not recorded: the meter faulted: {exc}"
        warnings.warn(EnergyAbsent(meter.fault), stacklevel=2)
        return []


def _per_call_j(fn: Callable[[], Any], meter: CounterMeter | PowerMeter, windows: int, min_s: float,
                clock: Callable[[], float], step_wait_s: float) -> list[float]:
    out = []
    for _ in range(windows):
        if isinstance(meter, CounterMeter):
            opened = _next_step(meter.read, clock, step_wait_s)
            if opened is None:
                return []
            start_j, start = opened
            calls, mark = 0, None
            while True:  # calls go on until the counter steps after min_s: the window closes busy, not idle
                fn()
                calls += 1
                at = clock()
                if at - start < min_s:
                    continue
                reading = meter.read()
                if mark is None:
                    mark = (reading, at)
                elif reading != mark[0]:
                    break
                elif at - mark[1] > step_wait_s:
                    return []
            joules = reading - start_j
        else:
            calls = 0

            def repeat() -> None:
                nonlocal calls
                start = clock()
                while True:
                    fn()
                    calls += 1
                    if clock() - start >= min_s:
                        return

            _, joules = meter.measure(repeat)
        if not math.isfinite(joules):
            raise MeterFault(f"{meter.method} gave {joules} J over a window")
        if joules <= 0 or calls == 0:
            return []
        out.append(joules / calls)
    return out


def integrate_j(samples: list[tuple[float, float]]) -> float:
    """Joules from ``(seconds, watts)`` samples in time order: the trapezoid rule."""
    return sum((t1 - t0) * (w0 + w1) / 2.0 for (t0, w0), (t1, w1) in zip(samples, samples[1:]))


def _nvml_handle(pynvml: Any, index: int) -> Any:
    """NVML's handle for CUDA device ``index``. NVML numbers every GPU of the node; CUDA numbers only the visible
    ones, so under ``CUDA_VISIBLE_DEVICES=5`` CUDA's device 0 is NVML's 5 (taken by index, the meter read another
    job's GPU, or an idle one). The device's UUID (from torch) names it for both; without it, the visible-devices
    list maps the ordinal (a UUID there may be a prefix, as CUDA accepts); with neither, the ordinal is NVML's too.

    A number there counts in CUDA's order, NVML's is the PCI bus order: they are one order under
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, and in practice on a node of one GPU model, but CUDA's default puts the fastest
    GPU first. On a node of mixed models without that setting this raises (no meter) rather than meter another GPU.
    """
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    except Exception:  # no uuid in this torch, no CUDA in it, or NVML does not know the name
        pass
    import os

    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    name = visible[index] if index < len(visible) else str(index)
    if not name.isdigit():
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(name)
        except Exception:  # a prefix of a UUID: CUDA takes the one device it names
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            named = [h for h in handles if _text(pynvml.nvmlDeviceGetUUID(h)).startswith(name)]
            if len(named) != 1:
                raise LookupError(f"CUDA_VISIBLE_DEVICES entry {name!r} names {len(named)} of NVML's GPUs") from None
            return named[0]
    if os.environ.get("CUDA_DEVICE_ORDER", "").strip().upper() != "PCI_BUS_ID":
        models = {_text(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)))
                  for i in range(pynvml.nvmlDeviceGetCount())}
        if len(models) > 1:
            raise LookupError(f"GPUs of {len(models)} models and CUDA's fastest-first order: CUDA's ordinal "
                              f"{name} is not NVML's; set CUDA_DEVICE_ORDER=PCI_BUS_ID")
    return pynvml.nvmlDeviceGetHandleByIndex(int(name))


def _text(value: Any) -> str:
    """NVML strings: bytes in older bindings, str in nvidia-ml-py 11.5+."""
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_meter(index: int) -> CounterMeter | None:
    """NVML's energy counter for GPU ``index``, or None without pynvml (nvidia-ml-py) or without the counter."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = _nvml_handle(pynvml, index)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # NotSupported before Volta
    except Exception:  # pynvml.NVMLError and its subclasses: no counter here
        return None
    return CounterMeter(lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0,
                        "nvml_total_energy_counter")


def gaudi_module_id(index: int, env: Mapping[str, str] | None = None) -> int | None:
    """The module id (hl-smi's and pyhlml's) of this process's ``hpu:index``: the ``index``-th entry of
    ``HABANA_VISIBLE_MODULES``; None when it is unset (the process acquired whichever module was free: unknown here)."""
    text = (os.environ if env is None else env).get("HABANA_VISIBLE_MODULES", "").strip()
    modules = [m.strip() for m in text.split(",") if m.strip()]
    if index < len(modules) and modules[index].isdigit():
        return int(modules[index])
    return None


def hl_smi_bus_id(module_id: int | None, run: Callable[..., Any] | None = None) -> str | None:
    """The PCI bus id that ``hl-smi -i`` takes, of module ``module_id`` (from ``hl-smi -Q module_id,bus_id``); with
    the module unknown, the node's only card's; None when it cannot be told which card is this process's."""
    import subprocess

    run = run or subprocess.run
    done = run(["hl-smi", "-Q", "module_id,bus_id", "-f", "csv,noheader"], capture_output=True, text=True,
               timeout=10, check=True)
    cards = {}
    for line in done.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            cards[int(parts[0])] = parts[1]
    if module_id is None:
        return next(iter(cards.values())) if len(cards) == 1 else None
    return cards.get(module_id)


def hl_smi_power_reader(bus_id: str, run: Callable[..., Any] | None = None) -> Callable[[], float]:
    """``read_w`` for the Gaudi at PCI ``bus_id`` through ``hl-smi -i <bus_id> -Q power.draw -f csv,noheader,nounits``
    (``-i`` takes a bus id, not an index)."""
    import subprocess

    run = run or subprocess.run

    def read_w() -> float:
        done = run(["hl-smi", "-i", bus_id, "-Q", "power.draw", "-f", "csv,noheader,nounits"],
                   capture_output=True, text=True, timeout=10, check=True)
        return float(done.stdout.strip().splitlines()[0].split(",")[0])

    return read_w


def pyhlml_handle(pyhlml: Any, module_id: int | None) -> Any:
    """pyhlml's handle of module ``module_id`` (its handles go by PCI order, not by module); with the module unknown,
    the node's only card's; None when it cannot be told which card is this process's."""
    handles = [pyhlml.hlmlDeviceGetHandleByIndex(i) for i in range(pyhlml.hlmlDeviceGetCount())]
    if module_id is None:
        return handles[0] if len(handles) == 1 else None
    return next((h for h in handles if pyhlml.hlmlDeviceGetModuleID(h) == module_id), None)


def hpu_meter(index: int, env: Mapping[str, str] | None = None, run: Callable[..., Any] | None = None,
              which: Callable[[str], str | None] | None = None) -> PowerMeter | None:
    """Sampled power of this process's ``hpu:index`` (pyhlml where importable, else hl-smi), or None when neither
    answers or the card cannot be told apart from the node's others (absent, never another card's)."""
    module_id = gaudi_module_id(index, env)
    try:
        import pyhlml

        pyhlml.hlmlInit()
        handle = pyhlml_handle(pyhlml, module_id)
        if handle is not None:
            read = lambda: pyhlml.hlmlDeviceGetPowerUsage(handle) / 1000.0  # noqa: E731  (milliwatts)
            read()
            return PowerMeter(read, "pyhlml_power_integrated")
    except Exception:  # not installed, or no device behind it
        pass
    import shutil

    if (which or shutil.which)("hl-smi") is None:
        return None
    try:
        bus_id = hl_smi_bus_id(module_id, run)
        if bus_id is None:
            return None
        read = hl_smi_power_reader(bus_id, run)
        read()
    except Exception:
        return None
    return PowerMeter(read, "hl_smi_power_integrated")


def meter_for(kind: str, index: int) -> CounterMeter | PowerMeter | None:
    """The energy meter of a device, or None where none reports energy (then no energy is recorded)."""
    if kind == "cuda":
        return nvml_meter(index)
    if kind == "hpu":
        return hpu_meter(index)
    return None


def energy_metrics(tokens: int, per_call_j: Sequence[float]) -> dict[str, Any]:
    """``energy_j`` (median joules of one call over the energy windows of :func:`per_call_j`) and ``tokens_per_j``
    (``tokens`` a call processes, per joule; each window's rate kept as a round), both measured; empty where the
    device reports no energy (absent, never 0)."""
    import statistics

    from pytest_genai.results.measurement import Measurement

    rounds = [float(j) for j in per_call_j if math.isfinite(j) and j > 0]  # inf J read as 0 tokens per joule
    if not rounds:
        return {}
    rates = tuple(tokens / j for j in rounds)
    several = len(rounds) >= 2
    return {"energy_j": Measurement(statistics.median(rounds), source="measured",
                                    rounds=tuple(rounds) if several else None),
            "tokens_per_j": Measurement(tokens / statistics.median(rounds), source="measured",
                                        rounds=rates if several else None)}
