"""Public helpers for testing this package and plug-ins written for it.

* :mod:`.solver_checks` — the ask/tell protocol checks a solver must pass
  (:func:`check_theta_solver`, :func:`check_z_solver`), like scikit-learn's estimator checks, and
  gated like them: as scikit-learn chooses an estimator's checks by its tags, the checks of a
  solver are chosen by the capabilities its class declares (:func:`solver_capabilities`):

  - ``supports_batch`` (θ, z): several asks before a tell; checked: a batch of ``batch_size``
    asks is valid with distinct ids (θ: distinct points) and ``run`` passes batches; without it,
    ``run`` passes one suggestion at a time;
  - ``supports_fidelity`` (z): partial-data suggestions; checked: they are used, and ``best`` is
    a full-data observation; without it, every fidelity is full;
  - ``keeps_state`` (θ): one instance per algorithm selection across ADMM iterations; checked:
    after ``update_problem`` with duals that reverse the order of the earlier observations,
    ``best`` and the next asks follow the new order;
  - ``needs_training_length`` (θ, e.g. ``bapi``): the solver chooses ``iterations``; checked on
    learning-curve problems: lengths in ``[t_min, t_max]`` (none where a point has no training
    length), some below ``t_max``, reproducible, and a problem without one refused or solved
    without lengths; without it, no suggestion sets ``iterations``;
  - ``supports_cheap_proposals`` (θ, z): ``ask_cheap`` for the overhead-aware loop; checked: cheap
    suggestions are valid, marked, seeded and not evaluated; without it, ``ask_cheap`` is refused.

  :func:`yield_solver_checks` lists the checks that apply to a solver (general ones first), like
  scikit-learn's ``_yield_all_checks``, so that a test can parametrize over (solver, check) pairs
  and name the failing check in its id; :data:`THETA_CAPABILITY_CHECKS` and
  :data:`Z_CAPABILITY_CHECKS` map each capability to its checks.
* :mod:`.problems` — synthetic sub-problems (one with learning curves) and a cached toy black box
  for the optimisers.
* :mod:`.iterative` — learners that count the iterations they train (imported by class path).
* :mod:`.estimators` — misbehaving estimators (raising, NaN, sleeping, busy in C, memory hog,
  one that kills its process at a chosen fit, a slow good one, a forest whose fit takes a known
  time) and a scaler that counts its fits.
* :mod:`.spaces` — small pipeline spaces.
* :data:`EXTRA_PACKAGES` — the importable packages of the optional extras (``pip install
  admm-automl[...]``), for tests that hide them or skip on their absence.
"""

from .estimators import (
    BusyClassifier,
    CountingScaler,
    KilledAtFitNB,
    MemoryHogClassifier,
    NaNClassifier,
    NappingForest,
    RaisingClassifier,
    SegfaultingClassifier,
    SleepingClassifier,
    SlowGaussianNB,
)
from .problems import (
    BAD_KINDS,
    CallLog,
    FakeClock,
    ToyEngine,
    bad_observation,
    curve_loss,
    make_curve_problem,
    make_theta_problem,
    make_z_problem,
)
from .solver_checks import (
    CAPABILITIES,
    THETA_CAPABILITY_CHECKS,
    THETA_CHECKS,
    Z_CAPABILITY_CHECKS,
    Z_CHECKS,
    SolverCapabilities,
    check_theta_solver,
    check_z_solver,
    general_theta_solvers,
    solver_capabilities,
    yield_solver_checks,
)
from .spaces import SYNTHETIC, synthetic_loss, tiny_space, wide_loss, wide_space

#: The top-level modules that the extras of pyproject.toml install and the core does not: FLAML,
#: Optuna, rich, matplotlib, LightGBM, XGBoost, CatBoost, Dask (and distributed), SMAC3 (and
#: ConfigSpace). The core must import and search without any of them.
EXTRA_PACKAGES = ("flaml", "optuna", "rich", "matplotlib", "lightgbm", "xgboost", "catboost",
                  "dask", "distributed", "smac", "ConfigSpace", "rbfopt", "pyomo_ripopt",
                  "pyomo")

__all__ = [
    "BAD_KINDS",
    "CAPABILITIES",
    "EXTRA_PACKAGES",
    "SYNTHETIC",
    "THETA_CAPABILITY_CHECKS",
    "THETA_CHECKS",
    "Z_CAPABILITY_CHECKS",
    "Z_CHECKS",
    "BusyClassifier",
    "CallLog",
    "CountingScaler",
    "FakeClock",
    "KilledAtFitNB",
    "MemoryHogClassifier",
    "NaNClassifier",
    "NappingForest",
    "RaisingClassifier",
    "SegfaultingClassifier",
    "SleepingClassifier",
    "SlowGaussianNB",
    "SolverCapabilities",
    "ToyEngine",
    "bad_observation",
    "curve_loss",
    "general_theta_solvers",
    "make_curve_problem",
    "check_theta_solver",
    "check_z_solver",
    "make_theta_problem",
    "make_z_problem",
    "solver_capabilities",
    "synthetic_loss",
    "tiny_space",
    "wide_loss",
    "wide_space",
    "yield_solver_checks",
]
