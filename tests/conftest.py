"""Test-suite configuration.

pytester's in-process runs snapshot and restore ``sys.modules``: a module first imported inside such a run is
dropped afterwards and imported again later, with new classes. torch cannot be imported twice in one process, and
matplotlib's artists then fail isinstance checks against the old classes ("Invalid arguments to set_clip_path, of
type Rectangle"), so both are imported once here, before any pytester run, when they are installed.
"""
try:
    import torch  # noqa: F401
except ImportError:  # the plugin itself works without torch
    pass
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
except ImportError:  # plots are optional
    pass
