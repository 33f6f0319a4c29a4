"""Stand-in for ``habana_frameworks.torch.hpu.random``: the CPU generator stands for the card's."""
import torch


def manual_seed(seed: int) -> None:
    torch.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.manual_seed(seed)


def get_rng_state(device=None):
    return torch.get_rng_state()


def set_rng_state(state, device=None) -> None:
    torch.set_rng_state(state)


def get_rng_state_all():
    return [torch.get_rng_state()]


def set_rng_state_all(states) -> None:
    if states:
        torch.set_rng_state(states[0])


def initial_seed() -> int:
    return torch.initial_seed()
