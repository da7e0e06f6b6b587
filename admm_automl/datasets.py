"""Loading data: scikit-learn's bundled sets, CSV files, and a directory of benchmark CSVs."""

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


def list_data_dir(data_dir: "str | Path") -> list[str]:
    """Dataset names in a directory of ``NAME.csv`` / ``NAME.csv.gz`` files."""
    folder = Path(data_dir)
    if not folder.is_dir():
        raise DataError(f"data directory {str(folder)!r} does not exist")
    names = {p.name.split(".csv")[0] for p in folder.iterdir() if ".csv" in p.name}
    return sorted(names)


def load_from_dir(name: str, data_dir: "str | Path", target: str = "target") -> tuple[Any, Any]:
    """``(X, y)`` of ``data_dir/NAME.csv[.gz]``; the target is the column ``target`` (the shared
    benchmark files put it last)."""
    folder = Path(data_dir)
    for suffix in (".csv.gz", ".csv"):
        path = folder / f"{name}{suffix}"
        if path.is_file():
            return load_csv(path, target)
    raise UnknownComponentError(unknown_name_message("dataset", name, list_data_dir(folder)))
