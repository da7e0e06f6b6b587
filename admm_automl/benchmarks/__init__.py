"""Benchmark problems: synthetic test functions with known optima (see :mod:`.functions`)."""

from .functions import BRANIN, FUNCTIONS, HARTMANN6, TestFunction, branin, get_function, hartmann6
from .functions import make_theta_problem

__all__ = [
    "BRANIN",
    "FUNCTIONS",
    "HARTMANN6",
    "TestFunction",
    "branin",
    "get_function",
    "hartmann6",
    "make_theta_problem",
]
