"""Gaudi's execution mode per run: lazy (ops accumulate until ``mark_step`` compiles and launches a graph) or eager
(each op runs as issued; torch.compile on top where asked).

The Intel Gaudi bridge reads ``PT_HPU_LAZY_MODE`` once, when ``habana_frameworks.torch`` is first imported, and
newer SynapseAI releases default to eager (0), so a run that wants lazy mode must set it in the ranks' environment
before they start, and a rank must check what it really got: a run labelled lazy that ran eagerly measures another
execution model. Torch-free: the launcher imports the environment helper; the rank calls :func:`require_mode`.
"""
from __future__ import annotations

HPU_MODES = ("lazy", "eager")


def mode_env(mode: str) -> dict[str, str]:
    """The environment that makes the Gaudi bridge start in ``mode`` (set before the rank imports it)."""
    if mode not in HPU_MODES:
        raise ValueError(f"hpu mode {mode!r}: use one of {HPU_MODES}")
    return {"PT_HPU_LAZY_MODE": "1" if mode == "lazy" else "0"}


def running_mode() -> str:
    """The mode the bridge in this process runs in (imports ``habana_frameworks``: call it in a Gaudi rank)."""
    from habana_frameworks.torch.utils.internal import is_lazy

    return "lazy" if is_lazy() else "eager"


def require_mode(requested: str, running: str | None = None) -> str:
    """``running`` (default: :func:`running_mode`) when it is ``requested``; RuntimeError naming both otherwise, so
    a run never reports one mode's numbers under the other's name."""
    running = running_mode() if running is None else running
    if running != requested:
        raise RuntimeError(f"the Gaudi bridge runs in {running} mode but this run asked for {requested} mode: "
                           f"PT_HPU_LAZY_MODE={mode_env(requested)['PT_HPU_LAZY_MODE']} must be set before "
                           "habana_frameworks is imported (something imported it earlier, or overrode the variable)")
    return running
