"""Loading data: scikit-learn's bundled sets, CSV files, a directory of benchmark CSVs, and OpenML.

:func:`load_dataset` resolves one name for all of them: ``openml:NAME`` / ``openml:ID`` (downloaded
once through :func:`sklearn.datasets.fetch_openml`, then read from its cache), ``NAME`` in
``data_dir`` when one is given, else a scikit-learn bundled set.
"""

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


OPENML_PREFIX = "openml:"


def load_openml(
    name_or_id: "str | int", *, version: "int | str" = "active", cache_dir: "str | Path | None" = None
) -> tuple[Any, Any]:
    """``(X, y)`` of an OpenML dataset by name or numeric id, X as a DataFrame.

    The first call downloads it into ``cache_dir`` (default: scikit-learn's data home,
    ``$SCIKIT_LEARN_DATA`` or ``~/scikit_learn_data``); later calls read the cache with no network.
    The target is the dataset's default target attribute.
    """
    from sklearn.datasets import fetch_openml

    key = str(name_or_id).strip()
    if not key:
        raise DataError("an OpenML dataset needs a name or an id, e.g. 'openml:credit-g' or 'openml:31'")
    by_id = {"data_id": int(key)} if key.isdigit() else {"name": key, "version": version}
    try:
        bunch = fetch_openml(
            **by_id, data_home=None if cache_dir is None else str(cache_dir), as_frame=True,
            parser="auto",
        )
    except OSError as err:  # URLError is an OSError: offline and not cached
        raise DataError(
            f"could not fetch OpenML dataset {key!r}: {err}. It is downloaded once and then read "
            "from the cache, so the first use needs network access."
        ) from None
    except ValueError as err:  # unknown name/id, or no default target
        raise DataError(f"OpenML dataset {key!r}: {err}") from None
    if bunch.target is None or getattr(bunch.target, "ndim", 1) != 1:
        raise DataError(f"OpenML dataset {key!r} has no single default target column")
    return bunch.data, bunch.target.to_numpy()


def load_dataset(
    name: str, data_dir: "str | Path | None" = None, cache_dir: "str | Path | None" = None
) -> tuple[Any, Any]:
    """``(X, y)`` by name: ``openml:NAME|ID``, ``NAME`` in ``data_dir``, or a bundled set."""
    if name.startswith(OPENML_PREFIX):
        return load_openml(name[len(OPENML_PREFIX):], cache_dir=cache_dir)
    if data_dir is not None:
        return load_from_dir(name, data_dir)
    return load_bundled(name)
