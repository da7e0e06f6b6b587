"""What ``fit`` and the prediction methods check of the data before any work: X (shape, inf,
feature names, the kind of every column — the rule is :mod:`admm_automl.evaluation.data`'s, which
the preprocessing follows — and at predict time the columns of ``fit``: :func:`conform`), y (one
target per row, the task inferred, classes checked); the labels mapped to the indices the search
used are :mod:`admm_automl.final.labels`'s."""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    check_array, check_consistent_length, check_is_fitted, column_or_1d, validate_data,
)

from ..evaluation.data import (
    as_frame_if_mixed, check_no_inf, check_unique_columns, column_kinds, to_numbers,
)
from ..exceptions import DataError, IdentifierColumnWarning
# the final model's label handling lives with it; its names stay importable from here, where
# the pickles of earlier versions find LabelEncodedClassifier
from ..final.labels import LabelEncodedClassifier, fit_on_labels, label_indices  # noqa: F401


def check_fit_X(estimator: Any, X: Any) -> Any:
    """Validate X at ``fit`` (at least 2 rows), record its columns on ``estimator`` (their names
    and count, as scikit-learn does, and their kinds) and keep mixed columns as a frame; a
    column that looks like an identifier is warned of."""
    X = _two_dimensional(X, min_rows=2)
    validate_data(estimator, X, skip_check_array=True, reset=True)
    X = as_frame_if_mixed(X)
    estimator._column_kinds = column_kinds(X)
    warn_identifier_columns(X, estimator._column_kinds)
    return X


def check_X(estimator: Any, X: Any) -> Any:
    """Validate X for the fitted ``estimator``: against the columns of ``fit``
    (:func:`conform`)."""
    check_is_fitted(estimator)
    X = conform(_two_dimensional(X, min_rows=1), estimator._column_kinds,
                getattr(estimator, "feature_names_in_", None))
    validate_data(estimator, X, skip_check_array=True, reset=False)
    return X


def _two_dimensional(X: Any, min_rows: int) -> Any:
    """X checked to be a table of at least ``min_rows`` rows and one column: a DataFrame as it
    is (its column names unique), anything else as scikit-learn's array (NaN allowed)."""
    if not hasattr(X, "iloc"):
        return check_array(X, dtype=None, ensure_all_finite="allow-nan", input_name="X",
                           ensure_min_samples=min_rows)
    if X.ndim != 2:
        raise DataError("X must be 2-D (rows x columns); for one feature pass "
                        "X.to_frame() or X.reshape(-1, 1)")
    if X.shape[0] < min_rows or X.shape[1] < 1:
        raise DataError(f"X has shape {X.shape}; need at least 2 rows and 1 column")
    check_unique_columns(X)
    return X


def conform(X: Any, kinds: Sequence[str], names: Sequence[Any] | None) -> Any:
    """X at predict time, checked against the ``kinds`` of the columns the model was fitted on
    (``names``: theirs, or None for an array): a clear :class:`DataError` for an array where
    non-numeric columns are expected and for a value that is not a number in a numeric column;
    numbers stored as text in a numeric column are converted."""
    if not hasattr(X, "iloc"):
        non_numeric = [i for i, kind in enumerate(kinds) if kind not in ("number", "numeric_text")]
        if non_numeric and names is not None:
            raise DataError(
                "X is an array, but the model was fitted on a DataFrame whose column(s) "
                f"{[names[i] for i in non_numeric]!r} are not numbers: pass a DataFrame with the "
                "columns it was fitted on"
            )
        X = as_frame_if_mixed(X)
        if not hasattr(X, "iloc"):
            return X
    if X.shape[1] != len(kinds):  # scikit-learn's check of the feature count says so
        return X
    check_no_inf(X)
    import pandas as pd

    converted = {}
    for i, kind in enumerate(kinds):
        col = X.iloc[:, i]
        if kind == "number" and not (pd.api.types.is_numeric_dtype(col.dtype)
                                     or pd.api.types.is_bool_dtype(col.dtype)):
            converted[i] = to_numbers(col, X.columns[i])
    if not converted:
        return X
    X = X.copy()
    for i, numbers in converted.items():
        X.isetitem(i, numbers)
    return X


def check_sensitive_features(sensitive_features: Any, n_rows: int, constraints: Any) -> None:
    """Check ``fit``'s ``sensitive_features``: one group label per row (1-D), or one column
    per sensitive feature (2-D: their intersection), and read by some constraint — a group
    fairness constraint without ``group_by``, or a callable, which is given them — rather than
    silently ignored.

    Raises
    ------
    DataError
        For another shape, or another number of rows than X.
    InvalidParameterError
        Where no constraint reads them.
    """
    from ..constraints import CallableConstraint, make_constraints
    from ..exceptions import InvalidParameterError

    if sensitive_features is None:
        return
    shape = np.shape(sensitive_features)
    if len(shape) not in (1, 2):
        raise DataError("sensitive_features must hold one group label per row of X (1-D), or "
                        f"one column per sensitive feature (2-D); got shape {shape}")
    if shape[0] != n_rows:
        raise DataError(f"sensitive_features has {shape[0]} rows but X has {n_rows}")
    if not any(isinstance(c, CallableConstraint) or
               (hasattr(c, "group_by") and c.group_by is None)
               for c in make_constraints(constraints)):
        raise InvalidParameterError(
            "sensitive_features were given but no constraint compares their groups: add a "
            "group-fairness constraint without group_by, such as "
            "constraints=['demographic_parity_difference <= 0.1']")


#: a category column is called identifier-like from this many distinct values, or when nearly
#: every row has its own value (then one-hot encoding gives about a feature per row)
IDENTIFIER_MIN_VALUES, IDENTIFIER_UNIQUE_FRACTION = 1000, 0.9


def warn_identifier_columns(X: Any, kinds: Any) -> None:
    """Warn, naming them, about category columns with nearly one value per row: an identifier
    carries no signal a model can use on new rows, and the target encoding it gets (see
    :func:`~admm_automl.evaluation.data.make_preprocessor`) is then noise."""
    for name, kind in zip(getattr(X, "columns", ()), kinds):
        if kind != "category":
            continue
        n_unique = int(X[name].nunique())
        if n_unique >= IDENTIFIER_MIN_VALUES or (
                len(X) >= 100 and n_unique >= IDENTIFIER_UNIQUE_FRACTION * len(X)):
            warnings.warn(
                f"column {name!r} has {n_unique} distinct values in {len(X)} rows: it looks "
                "like an identifier. It is target-encoded (one number per value, the mean "
                "target of its rows, cross-fitted), which says nothing about rows whose value "
                "the training data never saw: drop it if it identifies rows.",
                IdentifierColumnWarning, stacklevel=4)


#: a numeric target with whole values is classification up to this many distinct values ...
CLASSES_ALWAYS = 20
#: ... or up to this fraction of the rows (the second below 1000 rows) and at most CLASSES_MAX
CLASS_FRACTION, CLASS_FRACTION_SMALL, CLASSES_MAX = 0.05, 0.1, 1000


def infer_task(y: np.ndarray, target_type: str) -> str:
    """"classification" or "regression" for ``task="auto"``. Text labels and two values are
    classes; a numeric target with whole values (int, or floats such as 151.0) is classification
    only with few distinct values for its rows — at most :data:`CLASSES_ALWAYS`, or at most 5 %
    of the rows (10 % below 1000 rows) and :data:`CLASSES_MAX` — else regression: scikit-learn's
    ``type_of_target`` calls any whole-valued target "multiclass", so the diabetes progression
    scores (214 distinct values in 442 rows) became 214 classes. The fraction rule is AutoGluon's
    (``infer_problem_type``); the fixed floor keeps small data with a few classes classification."""
    if target_type == "binary":
        return "classification"
    if target_type != "multiclass":
        return "regression"
    if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.bool_):
        return "classification"
    n_classes = len(np.unique(y))
    fraction = CLASS_FRACTION if len(y) >= 1000 else CLASS_FRACTION_SMALL
    few = n_classes <= CLASSES_ALWAYS or (n_classes <= fraction * len(y)
                                          and n_classes <= CLASSES_MAX)
    return "classification" if few else "regression"


def check_target(X: Any, y: Any, task: str, owner: str) -> tuple[np.ndarray, str, str]:
    """``(y, task, target type)``: one target per row of X, the task inferred when "auto",
    classes checked."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y",
                                 ensure_min_samples=0), warn=True)
    check_consistent_length(X, y)
    target_type = type_of_target(y, input_name="y")
    if task == "auto":
        task = infer_task(y, target_type)
    if task == "classification":
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise DataError(f"y contains a single class ({classes[:1].tolist()[0]!r}); "
                            "classification needs at least 2 classes")
        return y, task, "binary" if len(classes) == 2 else "multiclass"
    try:
        return y.astype(float), task, "continuous"
    except (TypeError, ValueError):
        raise DataError(f"regression needs a numeric target, got dtype {y.dtype}") from None
