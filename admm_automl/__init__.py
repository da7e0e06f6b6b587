"""admm-automl: AutoML pipeline search by ADMM with pluggable sub-solvers (Liu et al., AAAI 2020).

The public names are imported lazily, so that ``import admm_automl.methods.admm`` (the numpy-only
ADMM loop) does not pull in scikit-learn.
"""

import logging

from ._lazy import attach

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {
    "ADMM": "estimator",
    "ADMMClassifier": "estimator",
    "ADMMRegressor": "estimator",
    "load_config": "config",
    "list_theta_solvers": "solvers",
    "list_z_solvers": "solvers",
    "Categorical": "space",
    "Fixed": "space",
    "Float": "space",
    "Int": "space",
    "PipelineSpace": "space",
    "list_spaces": "space",
    "load_space": "space",
}

__all__ = sorted(_LAZY) + ["__version__"]


__getattr__, __dir__ = attach(__name__, _LAZY, __all__)
