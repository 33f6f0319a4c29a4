"""Devices: the :class:`Device` value, probes for each kind (SDKs imported lazily) and specs as data."""
from pytest_genai.devices.device import ENABLE_HINTS, KINDS, Device
from pytest_genai.devices.probes import (PROBES, DeviceBroken, ProbeResult, broken_message, detect_all, run_probe,
                                         skip_reason)
from pytest_genai.devices.specs import DeviceSpec, get_spec, load_specs

__all__ = [
    "Device",
    "DeviceBroken",
    "DeviceSpec",
    "ENABLE_HINTS",
    "KINDS",
    "PROBES",
    "ProbeResult",
    "broken_message",
    "detect_all",
    "get_spec",
    "load_specs",
    "run_probe",
    "skip_reason",
]
