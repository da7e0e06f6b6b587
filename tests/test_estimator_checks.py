"""scikit-learn's estimator checks on a tiny budget."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from admm_automl import ADMMClassifier, ADMMRegressor
from admm_automl.space import space_from_dict

FAST = dict(max_evals=6, inner_iter=2, inner_iter_step=0, random_state=0)

CLASSIFIER_SPACE = space_from_dict(
    {
        "name": "check_classifier",
        "initial": {"classification": {"scaler": "none", "estimator": "gaussian_nb"}},
        "modules": [
            {"name": "scaler", "choices": [
                {"name": "none"},
                {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"}]},
            {"name": "estimator", "choices": [
                {"name": "gaussian_nb", "class": "sklearn.naive_bayes.GaussianNB"},
                {"name": "logistic_regression", "class": "sklearn.linear_model.LogisticRegression",
                 "hyperparameters": {"C": {"type": "float", "low": 0.1, "high": 10.0, "log": True,
                                           "default": 1.0}}}]},
        ],
    }
)
REGRESSOR_SPACE = space_from_dict(
    {
        "name": "check_regressor",
        "initial": {"regression": {"scaler": "none", "estimator": "ridge"}},
        "modules": [
            {"name": "scaler", "choices": [
                {"name": "none"},
                {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"}]},
            {"name": "estimator", "choices": [
                {"name": "ridge", "class": "sklearn.linear_model.Ridge", "task": "regression",
                 "hyperparameters": {"alpha": {"type": "float", "low": 0.01, "high": 10.0,
                                               "log": True, "default": 1.0}}},
                {"name": "tree", "class": "sklearn.tree.DecisionTreeRegressor", "task": "regression",
                 "hyperparameters": {"max_depth": {"type": "int", "low": 2, "high": 8,
                                                   "default": 5}}}]},
        ],
    }
)

EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks(
    [
        ADMMClassifier(search_space=CLASSIFIER_SPACE, **FAST),
        ADMMRegressor(search_space=REGRESSOR_SPACE, **FAST),
    ],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
