"""Stand-in for ``habana_frameworks.torch.core``: ``mark_step`` counts calls (on a card it compiles and launches the
lazy graph accumulated so far; here ops already ran eagerly on the CPU)."""
MARK_STEPS = [0]


def mark_step(device_str: str = "", sync: bool = False) -> None:
    MARK_STEPS[0] += 1


def hpu_set_env() -> None:
    """The real one sets bridge variables before the first op; nothing to set on the CPU."""


def get_device_name() -> str:
    return "STANDIN-CPU"
