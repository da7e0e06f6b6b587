"""Benchmark problems: synthetic test functions with known optima (see :mod:`.functions`)."""

from .functions import *  # noqa: F403
from .functions import __all__  # noqa: F401
