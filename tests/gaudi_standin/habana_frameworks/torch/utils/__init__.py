"""Stand-in for ``habana_frameworks.torch.utils``."""
from habana_frameworks.torch.utils import internal  # noqa: F401
