"""A space file is data a user may download or share: it names scikit-learn estimators, their
parameter objects and the functions they call, and anything else is refused before anything is
called (nothing of the standard library, no class without scikit-learn's parameter protocol)."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from admm_automl import ADMM
from admm_automl.exceptions import InvalidParameterError
from admm_automl.space import space_from_dict


def _space(estimator: dict) -> dict:
    return {"name": "trust", "modules": [{"name": "estimator", "choices": [
        {"name": "ok", "class": "sklearn.naive_bayes.GaussianNB"}, estimator]}]}


@pytest.mark.parametrize("choice, named", [
    ({"name": "shell", "class": "subprocess.Popen",
      "hyperparameters": {"args": {"type": "fixed", "value": "touch {marker}"},
                          "shell": {"type": "fixed", "value": True}}}, "subprocess.Popen"),
    ({"name": "bag", "class": "sklearn.ensemble.BaggingClassifier",
      "hyperparameters": {"estimator": {"type": "fixed", "value": {
          "class": "subprocess.Popen", "params": {"args": "touch {marker}", "shell": True}}}}},
     "subprocess.Popen"),
    ({"name": "kbest", "class": "sklearn.feature_selection.SelectKBest",
      "hyperparameters": {"score_func": {"type": "fixed", "value": {"function": "os.system"}}}},
     "os.system"),
    ({"name": "fn", "class": "numpy.sum"}, "numpy.sum"),  # a function where a class belongs
])
def test_a_space_that_names_anything_but_an_estimator_is_refused_before_any_call(
        tmp_path, choice, named):
    marker = tmp_path / "ran"
    text = repr(choice).replace("{marker}", str(marker))
    node = _space(eval(text))  # noqa: S307 (a literal of this test)
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(InvalidParameterError, match=named.replace(".", r"\.")):
        ADMM(search_space=space_from_dict(node), max_evals=2, executor="serial", cv=None,
             portfolio=None, ensemble_size=0).fit(X[:80], y[:80])
    assert not marker.exists(), "the space ran a command"


def test_estimators_kernels_and_score_functions_are_accepted():
    space = space_from_dict(_space({
        "name": "gp", "class": "sklearn.gaussian_process.GaussianProcessClassifier",
        "hyperparameters": {"kernel": {"type": "fixed", "value": {
            "class": "sklearn.gaussian_process.kernels.RBF", "params": {"length_scale": 2.0}}}}}))
    space.check_classes()
    kbest = space_from_dict(_space({
        "name": "kbest", "class": "sklearn.feature_selection.SelectKBest",
        "hyperparameters": {"score_func": {"type": "fixed", "value": {
            "function": "sklearn.feature_selection.f_classif"}}}}))
    kbest.check_classes()
    pipeline = space.to_pipeline((1,), space.encoding.initial_theta)
    assert pipeline.steps[-1][1].kernel.length_scale == 2.0
    assert np.isfinite(pipeline.fit(*load_breast_cancer(return_X_y=True)).score(
        *load_breast_cancer(return_X_y=True)))
