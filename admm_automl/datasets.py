"""Loading data for the command line: scikit-learn's bundled sets and CSV files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .exceptions import DataError, UnknownComponentError, unknown_name_message

BUNDLED = {
    "breast_cancer": "load_breast_cancer",
    "diabetes": "load_diabetes",
    "digits": "load_digits",
    "iris": "load_iris",
    "wine": "load_wine",
}


def load_bundled(name: str) -> tuple[Any, Any]:
    """``(X, y)`` of a scikit-learn bundled dataset (no network), X as a DataFrame."""
    if name not in BUNDLED:
        raise UnknownComponentError(unknown_name_message("dataset", name, BUNDLED))
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, BUNDLED[name])(as_frame=True)
    return bunch.data, bunch.target.to_numpy()


def load_csv(path: "str | Path", target: str) -> tuple[Any, Any]:
    """``(X, y)`` from a CSV file (gzip allowed) with a named target column."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} does not exist")
    frame = pd.read_csv(path)
    if frame.empty:
        raise DataError(f"data file {str(path)!r} has no rows")
    if target not in frame.columns:
        raise DataError(
            f"target column {target!r} is not in {str(path)!r}."
            + unknown_name_message("column", target, [str(c) for c in frame.columns])[
                len(f"Unknown column {target!r}.") :
            ]
        )
    y = frame.pop(target)
    if y.isna().any():
        raise DataError(f"target column {target!r} has {int(y.isna().sum())} missing values")
    return frame, y.to_numpy()
