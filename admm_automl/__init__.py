"""admm-automl: AutoML pipeline search by ADMM with pluggable sub-solvers (Liu et al., AAAI 2020)."""

import logging

from .config import load_config
from .estimator import ADMM, ADMMClassifier, ADMMRegressor
from .solvers import list_theta_solvers, list_z_solvers
from .space import Categorical, Fixed, Float, Int, PipelineSpace, list_spaces, load_space

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ADMM",
    "ADMMClassifier",
    "ADMMRegressor",
    "Categorical",
    "Fixed",
    "Float",
    "Int",
    "PipelineSpace",
    "__version__",
    "list_spaces",
    "list_theta_solvers",
    "list_z_solvers",
    "load_config",
    "load_space",
]
