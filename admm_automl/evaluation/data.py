"""Preparing the data of a run: mixed columns, infinities, the always-applied preprocessing, and a
fingerprint of the data for the journal's run header."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..exceptions import DataError


def as_frame_if_mixed(X: Any) -> Any:
    """Keep DataFrames and numeric arrays; turn object arrays into a DataFrame with inferred types
    (numbers stored as objects become numeric columns)."""
    if hasattr(X, "iloc"):
        return X
    X = np.asarray(X) if not hasattr(X, "dtype") else X
    if X.dtype.kind == "O":
        import pandas as pd

        frame = pd.DataFrame(X).infer_objects()
        for col in frame.columns:
            converted = pd.to_numeric(frame[col], errors="coerce")
            if converted.notna().sum() == frame[col].notna().sum():
                frame[col] = converted
        return frame
    return X


def check_no_inf(X: Any) -> None:
    """A DataFrame's numeric columns hold no ±inf (arrays are checked by scikit-learn)."""
    if hasattr(X, "iloc"):
        numeric = X.select_dtypes(include="number")
        bad = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(dtype=float)).any()]
        if bad:
            raise DataError(f"Input X contains infinity in column(s) {bad!r}; replace it with NaN "
                            "(which is imputed) or a finite value.")


def make_preprocessor(X: Any) -> Any:
    """Imputation of every column, plus one-hot encoding of non-numeric ones (always applied first).

    Numeric columns get their median and, for each column that has missing values in the training
    rows, a 0/1 missing-value indicator (``add_indicator``): a tree then separates the missing rows
    with one split, which is what the native missing-value handling of HistGradientBoosting,
    LightGBM and XGBoost learns, and linear models and k-NN get the information too. (Leaving NaN
    to the boosted trees alone would need a preprocessing per algorithm; the indicator gives every
    learner the same input at the cost of one column per incomplete feature.) Columns are addressed
    by position, so the fitted pipeline accepts the same kind of input.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    numeric_imputer = SimpleImputer(strategy="median", keep_empty_features=True,
                                    add_indicator=True)
    if not hasattr(X, "iloc"):
        return numeric_imputer
    import pandas as pd

    numeric = [
        i for i, dtype in enumerate(X.dtypes)
        if pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    ]
    other = [i for i in range(X.shape[1]) if i not in numeric]
    if not other:
        return numeric_imputer
    categorical = make_pipeline(
        SimpleImputer(strategy="most_frequent", keep_empty_features=True),
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
    )
    return ColumnTransformer(
        [("numeric", numeric_imputer, numeric), ("categorical", categorical, other)],
        verbose_feature_names_out=False,
    )


def fingerprint(*arrays: Any) -> str:
    """A SHA-256 of the values (and, for frames, column names and types) of arrays, frames, series
    and sparse matrices: equal data gives equal fingerprints in any process."""
    import pandas as pd

    digest = hashlib.sha256()
    for a in arrays:
        if hasattr(a, "tocsr"):  # scipy sparse
            a = a.tocsr()
            for part in (a.data, a.indices, a.indptr, np.asarray(a.shape)):
                digest.update(np.ascontiguousarray(part).tobytes())
            continue
        if not hasattr(a, "iloc"):
            a = np.asarray(a)
            if a.dtype.kind != "O":
                digest.update(f"{a.dtype.str}{a.shape}".encode())
                digest.update(np.ascontiguousarray(a).tobytes())
                continue
            a = pd.DataFrame(a.reshape(len(a), -1))
        if isinstance(a, pd.DataFrame):
            digest.update(repr([(str(c), str(t)) for c, t in a.dtypes.items()]).encode())
        digest.update(pd.util.hash_pandas_object(a, index=False).to_numpy().tobytes())
    return digest.hexdigest()
