"""The core install works without the extras: with FLAML, Optuna, rich, matplotlib, LightGBM,
XGBoost, CatBoost, Dask, SMAC3 and RBFOpt hidden (as if ``pip install admm-automl`` without extras), the package
imports, the default search fits and predicts, and each extra's feature says how to install it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from admm_automl.testing import EXTRA_PACKAGES

SCRIPT = textwrap.dedent(f"""
    import importlib.util, sys, warnings
    hidden = {EXTRA_PACKAGES!r}
    real = importlib.util.find_spec
    importlib.util.find_spec = (
        lambda name, *a: None if name.split(".")[0] in hidden else real(name, *a))
    for name in hidden:
        sys.modules[name] = None  # importing it raises ImportError, as when not installed
    warnings.simplefilter("ignore")
    from sklearn.datasets import load_breast_cancer
    from admm_automl import ADMM
    from admm_automl.exceptions import MissingDependencyError

    X, y = load_breast_cancer(return_X_y=True)
    model = ADMM(max_evals=3, cv=None, random_state=0, verbose=1).fit(X, y)
    assert model.predict(X).shape == (len(y),)
    pipelines = " ".join(model.history_["pipeline"])
    assert not any(name in pipelines for name in ("lightgbm", "xgboost", "catboost"))
    for params, what in (({{"theta_solver": "blendsearch"}}, "flaml"),
                         ({{"theta_solver": "tpe"}}, "optuna"),
                         ({{"theta_solver": "rbfopt"}}, "admm-automl[rbfopt]"),
                         ({{"progress": True}}, "rich")):
        try:
            ADMM(max_evals=3, cv=None, random_state=0, **params).fit(X, y)
        except MissingDependencyError as err:
            assert "pip install" in str(err) and what in str(err).lower(), err
        else:
            raise AssertionError(f"{{params}} ran without {{what}}")
    try:
        model.plot_convergence()
    except MissingDependencyError as err:
        assert "admm-automl[report]" in str(err), err
    print("core ok")
""")


def test_the_core_works_without_the_extras():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "core ok" in done.stdout, done.stderr[-3000:]


#: Optional or heavy packages that ``from admm_automl import ADMM`` must not import: each is
#: needed only by the feature that uses it (a solver, a learner, the plots, the fairness
#: mitigations, a Dask executor), which imports it when asked. Checked by name in a fresh process,
#: not by timing, so the test holds on a loaded machine.
NOT_ON_IMPORT = ("skopt", "rbfopt", "pyomo", "fairlearn", "flaml", "optuna", "smac",
                 "ConfigSpace", "dask", "distributed", "matplotlib", "lightgbm", "xgboost",
                 "catboost", "torch", "sklearn.gaussian_process")


def test_importing_the_estimator_leaves_the_optional_packages_unloaded():
    code = textwrap.dedent(f"""
        import sys
        import admm_automl
        from admm_automl import ADMM, ADMMClassifier, ADMMRegressor
        ADMM(time_budget=10, constraints=["demographic_parity_difference <= 0.1"]).get_params()
        import admm_automl.cli  # the command line's start too
        print(sorted(m for m in {NOT_ON_IMPORT!r} if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", f"imported by `from admm_automl import ADMM`: {done.stdout}"
