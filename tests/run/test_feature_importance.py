"""``feature_importance``: permutation importance of the returned model on data the user
passes, in the search metric's units."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from admm_automl import ADMMClassifier
from admm_automl.testing import tiny_space


def test_the_informative_column_comes_first_and_noise_near_zero():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"noise_a": rng.normal(size=400), "signal": rng.normal(size=400),
                      "noise_b": rng.normal(size=400)})
    y = (X["signal"] + 0.3 * rng.normal(size=400) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMMClassifier(search_space=tiny_space(), theta_solver="random",
                               z_solver="random", executor="serial", max_evals=4,
                               random_state=0, ensemble_size=0).fit(X[:300], y[:300])
    table = model.feature_importance(X[300:], y[300:], n_repeats=5, random_state=0)
    assert list(table.columns) == ["feature", "importance", "std"]
    assert table["feature"].iloc[0] == "signal" and table["importance"].iloc[0] > 0.2
    assert table.set_index("feature").loc[["noise_a", "noise_b"], "importance"].abs().max() < 0.05
    again = model.feature_importance(X[300:], y[300:], n_repeats=5, random_state=0)
    pd.testing.assert_frame_equal(table, again)  # one seed, one answer
    with pytest.raises(ValueError):  # columns the model was not fitted on
        model.feature_importance(X[300:].rename(columns={"signal": "other"}), y[300:])
