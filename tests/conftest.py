"""Shared fixtures: synthetic spaces with a known best pipeline, a cached toy black box, optimiser
factories and small datasets.

Conventions: fixtures that build things are factories named ``make_*``; tests that fit real
pipelines end to end for more than a few seconds are marked ``slow`` (``make test-fast`` skips
them).
"""

from __future__ import annotations

import os

import pytest
from threadpoolctl import threadpool_limits

from admm_automl.exceptions import MissingDependencyError
from admm_automl.testing import (EXTRA_PACKAGES, SYNTHETIC, FakeClock, ToyEngine, synthetic_loss,
                                 wide_loss)

# One BLAS/OpenMP thread per test process: `make test` runs two test processes on two cores, and
# a multi-threaded OpenBLAS in each (a serial fit runs in the test process) oversubscribes them —
# a search of small logistic regressions took 170 s beside a busy neighbour, 9 s with one thread.
# Worker processes set their own limit (tests/evaluation/test_faults.py checks it).
threadpool_limits(1)

# One trial at a time unless a test asks for workers: the estimator's n_jobs=-1 (its default)
# counts the cores joblib says this process may use, which LOKY_MAX_CPU_COUNT caps as a CPU
# affinity or a container quota would; a test of several workers passes n_jobs itself. Without
# it the default would run every test's search in a process pool beside the other test process.
os.environ["LOKY_MAX_CPU_COUNT"] = "1"

# ----------------------------------------------------------------------------- the bare core
# The packages of the extras (pyproject.toml's optional dependencies, with the `test` and `docs`
# tools). With ADMM_AUTOML_CORE_ONLY=1 (`make test-core`: a fresh venv with the core dependencies
# only), a test that fails because one of them is missing is reported as skipped, naming it; any
# other failure stays a failure. Without the variable nothing changes: the full install runs every
# test.
OPTIONAL_PACKAGES = frozenset(EXTRA_PACKAGES) | {"importlinter", "sphinx"}
CORE_ONLY = os.environ.get("ADMM_AUTOML_CORE_ONLY") == "1"


def missing_extra(error: BaseException | None) -> str | None:
    """The extra's package whose absence raised ``error`` (or an error it was raised from)."""
    while error is not None:
        if isinstance(error, MissingDependencyError):
            return str(error).splitlines()[0]
        if isinstance(error, ModuleNotFoundError) and error.name \
                and error.name.split(".")[0] in OPTIONAL_PACKAGES:
            return f"{error.name.split('.')[0]} is not installed"
        error = error.__cause__ or error.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if CORE_ONLY and report.failed and call.excinfo is not None:
        reason = missing_extra(call.excinfo.value)
        if reason is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0,
                               f"Skipped: needs an extra: {reason}")


# ----------------------------------------------------------------------------- engines
@pytest.fixture
def make_engine():
    """``make_engine(space=SYNTHETIC, loss=synthetic_loss, **ToyEngine options)``."""

    def factory(space=SYNTHETIC, loss=None, **kwargs):
        if loss is None:
            loss = synthetic_loss if space is SYNTHETIC else wide_loss
        return ToyEngine(space, loss, **kwargs)

    return factory


@pytest.fixture
def fake_clock():
    return FakeClock()


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="session")
def breast_cancer():
    """``(X, y)``: 300 rows of scikit-learn's breast-cancer data (binary)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return X[:300], y[:300]


@pytest.fixture(scope="session")
def breast_cancer_full():
    """``(X, y)``: all 569 rows of scikit-learn's breast-cancer data (binary), as NumPy arrays, for
    the tests whose expectations were set on the whole data set."""
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="session")
def diabetes():
    """``(X, y)``: scikit-learn's diabetes data (regression)."""
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True)


# ----------------------------------------------------------------------------- optimisers
@pytest.fixture
def make_optimizer(make_engine):
    """``make_optimizer(method="admm", engine=None, space=SYNTHETIC, theta="random", z="random",
    **options)``: an optimiser over a toy engine (60 evaluations, 4 per sub-problem, seed 0 unless
    given)."""
    from admm_automl.methods.driver import Schedule
    from admm_automl.methods.registry import make_optimizer as make

    def factory(method="admm", engine=None, space=SYNTHETIC, theta="random", z="random", **kw):
        kw.setdefault("max_evals", 60)
        kw.setdefault("schedule", Schedule(4, 0, 4))
        kw.setdefault("seed", 0)
        engine = engine if engine is not None else make_engine(space)
        return make(method, space.encoding, engine, theta_solver=theta, z_solver=z, space=space,
                    **kw)

    return factory
