"""Stand-in for ``habana_frameworks.torch.utils.experimental``: the device type optimum-habana reads to pick Gaudi2's
FP8 format and to name the card. The stand-in reports the type named by ``GENAI_STANDIN_GAUDI`` (gaudi, gaudi2,
gaudi3; default gaudi2) although no card is there."""
import enum
import os

from habana_frameworks.torch import hpu  # noqa: F401  (optimum-habana reads htexp.hpu)


class synDeviceType(enum.IntEnum):  # noqa: N801  (the bridge's name)
    synDeviceGaudi = 1
    synDeviceGaudi2 = 2
    synDeviceGaudi3 = 3


def _get_device_type() -> synDeviceType:
    name = os.environ.get("GENAI_STANDIN_GAUDI", "gaudi2")
    types = {"gaudi": synDeviceType.synDeviceGaudi, "gaudi2": synDeviceType.synDeviceGaudi2,
             "gaudi3": synDeviceType.synDeviceGaudi3}
    if name not in types:
        raise ValueError(f"GENAI_STANDIN_GAUDI={name!r}: use one of {', '.join(types)}")
    return types[name]
