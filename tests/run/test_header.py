"""The run header and its digests (admm_automl/run/header.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse

from admm_automl.run.header import fingerprint, function_header
from admm_automl.space import load_space


def test_equal_data_give_equal_fingerprints_and_other_data_other_ones():
    X = np.arange(12.0).reshape(4, 3)
    assert fingerprint(X, np.arange(4)) == fingerprint(X.copy(), np.arange(4))
    other = X.copy()
    other[0, 0] = -1
    assert fingerprint(other, np.arange(4)) != fingerprint(X, np.arange(4))
    assert fingerprint(X.astype(np.float32)) != fingerprint(X)  # the dtype counts
    assert fingerprint(scipy.sparse.csr_matrix(X)) == fingerprint(scipy.sparse.csc_matrix(X))


def test_a_frame_is_fingerprinted_with_its_column_names_and_types():
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert fingerprint(frame) == fingerprint(frame.copy())
    assert fingerprint(frame.rename(columns={"a": "c"})) != fingerprint(frame)
    assert fingerprint(frame.astype({"a": float})) != fingerprint(frame)


def test_a_function_header_names_the_function_its_settings_and_the_space():
    space = load_space("paper_small")
    header = function_header("artificial", space, function_seed=3)
    assert header["function"] == {"name": "artificial", "function_seed": 3}
    assert header["space"]["name"] == space.name
    assert header == function_header("artificial", load_space("paper_small"), function_seed=3)
