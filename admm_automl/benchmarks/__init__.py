"""Benchmarks: synthetic test functions with known optima (:mod:`.functions`), the artificial
pipeline objective of Liu et al. 2020 (:mod:`.artificial`), the Optuna / FLAML peers
(:mod:`.peers`), one runner for every method (:mod:`.runner`) and the analysis of its runs
(:mod:`.analysis`)."""

from .functions import *  # noqa: F403
from .functions import __all__  # noqa: F401
