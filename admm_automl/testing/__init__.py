"""Public helpers for testing this package and plug-ins written for it.

* :mod:`.solver_checks` — the ask/tell protocol checks every solver must pass
  (:func:`check_theta_solver`, :func:`check_z_solver`), like scikit-learn's estimator checks.
* :mod:`.problems` — synthetic sub-problems and a cached toy black box for the optimisers.
* :mod:`.estimators` — misbehaving estimators (raising, NaN, sleeping, busy in C, memory hog)
  and a scaler that counts its fits.
* :mod:`.spaces` — small pipeline spaces.
"""

from .estimators import (
    BusyClassifier,
    CountingScaler,
    MemoryHogClassifier,
    NaNClassifier,
    RaisingClassifier,
    SleepingClassifier,
)
from .problems import (
    BAD_KINDS,
    CallLog,
    FakeClock,
    ToyEngine,
    bad_observation,
    make_theta_problem,
    make_z_problem,
)
from .solver_checks import THETA_CHECKS, Z_CHECKS, check_theta_solver, check_z_solver
from .spaces import SYNTHETIC, synthetic_loss, tiny_space, wide_loss, wide_space

__all__ = [
    "BAD_KINDS",
    "SYNTHETIC",
    "THETA_CHECKS",
    "Z_CHECKS",
    "BusyClassifier",
    "CallLog",
    "CountingScaler",
    "FakeClock",
    "MemoryHogClassifier",
    "NaNClassifier",
    "RaisingClassifier",
    "SleepingClassifier",
    "ToyEngine",
    "bad_observation",
    "check_theta_solver",
    "check_z_solver",
    "make_theta_problem",
    "make_z_problem",
    "synthetic_loss",
    "tiny_space",
    "wide_loss",
    "wide_space",
]
