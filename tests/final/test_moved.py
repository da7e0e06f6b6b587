"""The final model's modules moved from ``admm_automl.run`` to ``admm_automl.final``: a fitted
model pickled by an earlier version names its classes by their old modules, and still loads."""

from __future__ import annotations

import pickle

import pytest
from sklearn.linear_model import LogisticRegression

from admm_automl.final.bagging import BaggedClassifier
from admm_automl.final.labels import LabelEncodedClassifier
from admm_automl.final.stacking import StackedClassifier


@pytest.mark.parametrize("obj,old", [
    (BaggedClassifier(LogisticRegression()), "admm_automl.run.bagging"),
    (StackedClassifier([("a", LogisticRegression())], LogisticRegression()),
     "admm_automl.run.stacking"),
    (LabelEncodedClassifier(LogisticRegression()), "admm_automl.run.inputs"),
])
def test_a_pickle_that_names_the_old_module_loads(obj, old):
    new = type(obj).__module__
    text = pickle.dumps(obj, protocol=0)  # the text protocol names each class as module\nname
    assert new.encode() in text
    loaded = pickle.loads(text.replace(new.encode() + b"\n", old.encode() + b"\n"))
    assert type(loaded) is type(obj) and loaded.get_params().keys() == obj.get_params().keys()
