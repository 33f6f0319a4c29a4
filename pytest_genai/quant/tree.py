"""Where a module sits in a model: the one helper that both the native quantizer (``apply``) and the third-party
backends (``backends``) need, below both of them so neither imports the other to get it."""
from __future__ import annotations


def set_module(model, name: str, module) -> None:
    """Put ``module`` at the dotted path ``name`` of ``model`` (``"model.layers.0.mlp.up_proj"``)."""
    if "." in name:
        parent_name, child = name.rsplit(".", 1)
        setattr(model.get_submodule(parent_name), child, module)
    else:
        setattr(model, name, module)
