"""Preparing the data of a run: what each column is (and the refusal of a column that is none
of the kinds below), and the always-applied preprocessing that makes it numbers. (The
estimator's checks of its input, at ``fit`` and at predict time, are
:mod:`admm_automl.run.inputs`'s; the data's fingerprint in the journal's run header is
:mod:`admm_automl.run.header`'s.)

The rule for the columns of a DataFrame (an array is a frame whose columns are named 0, 1, ...):

=================  =====================================================  ======================
kind               which columns                                          prepared as
=================  =====================================================  ======================
``number``         numeric or boolean dtype (nullable ones too)           median imputation (+
                                                                          missing indicator)
``category``       pandas ``category`` dtype; text (strings)              most frequent value,
                                                                          one-hot encoding (codes
                                                                          for tree learners:
                                                                          :func:`ordinal_categories`;
                                                                          a category dtype for
                                                                          boosted learners:
                                                                          :func:`native_categories`;
                                                                          above 50 distinct
                                                                          values: target encoding)
``numeric_text``   every value reads as a number (``"3.5"``, ``" 7"``,    converted with
                   ``"1e3"``) or is a Python number in an object column   ``pandas.to_numeric``,
                                                                          then as ``number``
``datetime``       datetime64 dtype (time-zone aware too), or Python      seconds since
                   ``datetime`` / ``date`` objects                        1970-01-01 UTC, year,
                                                                          month, day, weekday
                                                                          (and hour when a value
                                                                          has a time of day)
``timedelta``      timedelta64 dtype, or Python ``timedelta`` objects     seconds
``na_text``        text holding ``pandas.NA`` (the ``"string"`` dtype)    NA becomes NaN, then as
                                                                          ``category``
=================  =====================================================  ======================

Missing values (None, NaN, NaT, NA) do not count in deciding a kind. Everything else is refused
before any search with a :class:`~admm_automl.exceptions.DataError` that names the column: a
column that mixes numbers and text (``[3, "abc"]``: numbers with a placeholder, or codes?),
other Python objects (lists, dicts), complex numbers, periods and intervals, duplicate column
names, infinities. Date-times in text are not parsed (their format is ambiguous): convert them
with ``pandas.to_datetime`` first.

The conversions are steps of the fitted pipeline (:class:`ColumnConverter`, only for the columns
that need one), so ``best_pipeline_`` accepts the same raw input as ``fit``; data whose columns
are all ``number`` or ``category`` get a pipeline of scikit-learn objects only.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from ..exceptions import DataError

#: distinct values above which a category column is target-encoded, not one-hot encoded
HIGH_CARDINALITY = 50

#: the kinds of columns (see the module docstring)
KINDS = ("number", "category", "numeric_text", "datetime", "timedelta", "na_text")
#: the features of a date-time column, in order (``hour`` only where some value has a time of day)
DATETIME_PARTS = ("timestamp", "year", "month", "day", "weekday", "hour")
_NUMBERS = {"integer", "floating", "mixed-integer-float", "decimal", "boolean", "empty"}
_DATETIMES = {"datetime", "datetime64", "date"}
_TIMEDELTAS = {"timedelta", "timedelta64"}
_TEXT = {"string", "bytes"}


def take_rows(X: Any, rows: np.ndarray) -> Any:
    """Rows of a numpy array, a pandas object or a sparse matrix."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def as_frame_if_mixed(X: Any) -> Any:
    """Keep DataFrames and numeric arrays; turn arrays of objects, strings or date-times into a
    DataFrame (columns 0, 1, ...) whose columns of plain numbers get a numeric dtype."""
    if hasattr(X, "iloc"):
        return X
    X = np.asarray(X) if not hasattr(X, "dtype") else X
    if X.dtype.kind in "OUSMm":
        import pandas as pd

        return pd.DataFrame(X).infer_objects()
    return X


def check_unique_columns(X: Any) -> None:
    """A DataFrame's column names are unique."""
    if hasattr(X, "columns") and not X.columns.is_unique:
        duplicated = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
        raise DataError(
            f"X has duplicate column names {duplicated!r}: every column needs its own name "
            "(rename them, e.g. X.columns = [...], or drop the copies)"
        )


def check_no_inf(X: Any) -> None:
    """A DataFrame's numeric columns hold no ±inf (arrays are checked by scikit-learn)."""
    if hasattr(X, "iloc"):
        numeric = X.select_dtypes(include="number", exclude="complex")
        bad = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(dtype=float)).any()]
        if bad:
            raise DataError(f"Input X contains infinity in column(s) {bad!r}; replace it with NaN "
                            "(which is imputed) or a finite value.")


def _examples(col: Any) -> str:
    """``3 (int), 'abc' (str)``: the first value of each type in a column, up to three types."""
    first: dict[str, Any] = {}
    for value in col.dropna():
        first.setdefault(type(value).__name__, value)
        if len(first) == 3:
            break
    return ", ".join(f"{v!r} ({t})" for t, v in first.items())


def _has_pandas_na(col: Any) -> bool:
    import pandas as pd

    if isinstance(col.dtype, pd.StringDtype) and col.dtype.na_value is pd.NA:
        return True
    return col.dtype == object and any(v is pd.NA for v in col[col.isna()])


def to_numbers(col: Any, name: Any) -> Any:
    """The values of ``col`` as floats (missing ones NaN); a value that is not a number or is
    infinite is a :class:`DataError` naming the column, the value and its row."""
    import pandas as pd

    numbers = pd.to_numeric(col, errors="coerce").astype(float)
    bad = col.notna().to_numpy() & numbers.isna().to_numpy()
    if bad.any():
        row = col.index[bad][0]
        raise DataError(
            f"column {name!r} holds {col[bad].iloc[0]!r} (row {row!r}), which is not "
            "a number, but the column was numeric when the model was fitted"
        )
    if np.isinf(numbers.to_numpy()).any():
        raise DataError(f"column {name!r} holds infinity; replace it with NaN (which "
                        "is imputed) or a finite value")
    return numbers


def _column_kind(name: Any, col: Any) -> str:
    import pandas as pd

    types = pd.api.types
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if types.infer_dtype(dtype.categories, skipna=True) in ("mixed", "mixed-integer"):
            raise DataError(
                f"column {name!r} is categorical with categories of several types "
                f"({_examples(pd.Series(dtype.categories))}); make them one type, e.g. "
                f"X[{name!r}] = X[{name!r}].astype(str)"
            )
        return "category"
    if types.is_complex_dtype(dtype):
        raise DataError(f"column {name!r} holds complex numbers, which no estimator "
                        "takes; split them into real and imaginary parts")
    if types.is_bool_dtype(dtype) or types.is_numeric_dtype(dtype):
        return "number"
    if types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if types.is_timedelta64_dtype(dtype):
        return "timedelta"
    if not (types.is_object_dtype(dtype) or types.is_string_dtype(dtype)):
        raise DataError(f"column {name!r} has dtype {dtype}, which cannot be used; "
                        "convert it to numbers, text or date-times")
    inferred = types.infer_dtype(col, skipna=True)
    if inferred in _DATETIMES:
        return "datetime"
    if inferred in _TIMEDELTAS:
        return "timedelta"
    if inferred in _NUMBERS:
        to_numbers(col, name)  # infinities
        return "numeric_text"
    if inferred in _TEXT | {"mixed", "mixed-integer"}:
        numbers = pd.to_numeric(col, errors="coerce")
        if numbers.notna().sum() == col.notna().sum():
            to_numbers(col, name)
            return "numeric_text"
        if inferred in _TEXT:
            return "na_text" if _has_pandas_na(col) else "category"
    held = {type(v).__name__ for v in col.dropna()}
    if len(held) == 1:  # lists, dicts, periods, ...
        raise DataError(f"column {name!r} holds {held.pop()} values ({_examples(col)}), which "
                        "are neither numbers, text nor date-times: convert them first")
    raise DataError(
        f"column {name!r} mixes values of several types ({_examples(col)}), so it is "
        "neither numbers nor categories: say which it is, e.g. "
        f"X[{name!r}] = X[{name!r}].astype(str) (categories) or "
        f"pandas.to_numeric(X[{name!r}], errors='coerce') (numbers; the rest becomes missing)"
    )


def column_kinds(X: Any) -> tuple[str, ...]:
    """The kind of every column of X (see the module docstring); a numeric array is all
    ``number``. Raises :class:`DataError` naming the first column that cannot be used."""
    if not hasattr(X, "iloc"):
        return ("number",) * (X.shape[1] if np.ndim(X) == 2 else 1)
    check_unique_columns(X)
    check_no_inf(X)
    return tuple(_column_kind(name, X[name]) for name in X.columns)


def _has_time_of_day(col: Any) -> bool:
    """Whether some value of a date-time column is not at midnight (UTC)."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = pd.to_datetime(col, utc=True, errors="coerce").dropna()
    return bool((times != times.dt.normalize()).any())


class ColumnConverter(TransformerMixin, BaseEstimator):
    """Turn columns into what imputation and one-hot encoding take: numbers stored as text into
    numbers, date-times and durations into numbers, text with ``pandas.NA`` into text with NaN.

    A step of the fitted pipeline for the columns that need it (the rule is in the module
    docstring); stateless apart from the column count.

    Parameters
    ----------
    kind : {"numeric_text", "datetime", "timedelta", "na_text"}
    names : tuple
        The names of the columns it gets, for error messages when it is given an array.
    parts : tuple of str
        The features of each date-time column (a subset of :data:`DATETIME_PARTS`, in order):
        ``timestamp`` is seconds since 1970-01-01 UTC; the calendar parts are those of the UTC
        time (naive values are taken as UTC); ``weekday`` is 0 for Monday; ``hour`` has the
        minutes and seconds as its fraction.
    """

    def __init__(self, kind: str = "numeric_text", names: tuple = (),
                 parts: tuple[str, ...] = DATETIME_PARTS) -> None:
        self.kind = kind
        self.names = names
        self.parts = parts

    def fit(self, X: Any, y: Any = None) -> "ColumnConverter":
        self.n_features_in_ = int(np.shape(X)[1])
        return self

    def transform(self, X: Any) -> np.ndarray:
        import pandas as pd

        frame = X if hasattr(X, "iloc") else pd.DataFrame(X)
        names = frame.columns if hasattr(X, "iloc") or not self.names else self.names
        columns = [self._convert(frame.iloc[:, i], name) for i, name in enumerate(names)]
        return np.column_stack(columns).astype(object if self.kind == "na_text" else float)

    def _convert(self, col: Any, name: Any) -> Any:
        import pandas as pd

        if self.kind == "numeric_text":
            return to_numbers(col, name).to_numpy()
        if self.kind == "na_text":
            return col.astype(object).where(col.notna(), np.nan).to_numpy()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.kind == "timedelta":
                    return (pd.to_timedelta(col) / pd.Timedelta(seconds=1)).to_numpy(dtype=float)
                times = pd.to_datetime(col, utc=True)
        except (TypeError, ValueError) as err:
            raise DataError(f"column {name!r} should hold "
                            f"{'durations' if self.kind == 'timedelta' else 'date-times'}: "
                            f"{err}") from None
        parts = {
            "timestamp": lambda: (times - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1),
            "year": lambda: times.dt.year, "month": lambda: times.dt.month,
            "day": lambda: times.dt.day, "weekday": lambda: times.dt.day_of_week,
            "hour": lambda: times.dt.hour + times.dt.minute / 60 + times.dt.second / 3600,
        }
        return np.column_stack([parts[p]().to_numpy(dtype=float) for p in self.parts])

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        names = list(input_features if input_features is not None else self.names)
        if self.kind == "datetime":
            names = [n if p == "timestamp" else f"{n}_{p}" for n in names for p in self.parts]
        return np.asarray([str(n) for n in names], dtype=object)


def make_preprocessor(X: Any) -> Any:
    """The step always applied first: conversion of the columns that need it (see the module
    docstring), imputation of every column, one-hot encoding of categories.

    A category column with more than :data:`HIGH_CARDINALITY` distinct values is target-encoded
    instead (scikit-learn's ``TargetEncoder``: each value becomes the smoothed mean of the
    target over its rows, cross-fitted on the training rows so that a row's own label does not
    leak into its feature; one column per class for a multiclass target). One-hot encoding
    would make it as many features as it has values — an id column of 10 000 values became
    10 000 features, and a 20 s search ended with nothing — and most learners cannot use a
    column seen a handful of times each; FLAML and AutoGluon encode such columns too.

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

    def imputer() -> SimpleImputer:
        return SimpleImputer(strategy="median", keep_empty_features=True, add_indicator=True)

    def encoder(*first: Any) -> Any:
        return make_pipeline(
            *first, SimpleImputer(strategy="most_frequent", keep_empty_features=True),
            OneHotEncoder(handle_unknown="ignore", sparse_output=False),
        )

    kinds = column_kinds(X)
    if set(kinds) == {"number"}:
        return imputer()
    columns = {kind: [i for i, k in enumerate(kinds) if k == kind] for kind in KINDS}
    has_time = any(_has_time_of_day(X.iloc[:, i]) for i in columns["datetime"])
    parts = {"parts": DATETIME_PARTS if has_time else DATETIME_PARTS[:-1]}
    many = [i for i in columns["category"] if X.iloc[:, i].nunique() > HIGH_CARDINALITY]
    branches = [("numeric", imputer(), columns["number"]),
                ("categorical", encoder(), [i for i in columns["category"] if i not in many]),
                ("high_cardinality", make_pipeline(
                    SimpleImputer(strategy="most_frequent", keep_empty_features=True),
                    _target_encoder()), many)]
    for kind in ("numeric_text", "datetime", "timedelta", "na_text"):
        names = tuple(X.columns[i] for i in columns[kind])
        converter = ColumnConverter(kind, names, **(parts if kind == "datetime" else {}))
        steps = encoder(converter) if kind == "na_text" else make_pipeline(converter, imputer())
        branches.append((kind, steps, columns[kind]))
    return ColumnTransformer([b for b in branches if b[2]], verbose_feature_names_out=False)


def ordinal_categories(preprocessor: Any) -> Any | None:
    """A copy of a :func:`make_preprocessor` preprocessor whose low-cardinality category columns
    become one column of integer codes each (scikit-learn's ``OrdinalEncoder``; a value the
    training rows never had becomes −1), or None when it one-hot encodes nothing.

    For the tree learners (their space choices declare ``categories: ordinal``): a tree splits a
    column of codes as it splits a number, one cut isolating a run of values, so it needs no
    column per value — and a few columns of codes keep a wide categorical table as narrow as its
    raw form, where one-hot encoding makes each split see a single value at a time. FLAML gives
    scikit-learn's forests the category codes; AutoGluon gives its tree models codes or the
    category dtype, never a one-hot encoding. Linear models, k-nearest neighbours and SVMs keep
    the one-hot encoding: to them a code would be a magnitude.
    """
    from sklearn.base import clone

    if not _one_hot_branches(preprocessor):
        return None
    ordinal = clone(preprocessor)
    return ordinal.set_params(**{f"{name}__onehotencoder": _ordinal_encoder()
                                 for name, _, _ in _one_hot_branches(ordinal)})


def native_categories(preprocessor: Any) -> Any | None:
    """A copy of a :func:`make_preprocessor` preprocessor for the learners that split category
    columns natively; None when it one-hot encodes nothing.

    Each low-cardinality category column becomes a pandas ``category`` column of integer codes
    (:class:`CategoryCodes`), and they come first: the copy's output is a DataFrame whose first
    ``k`` columns are the category columns (:func:`category_columns`). HistGradientBoosting
    (``categorical_features="from_dtype"``), LightGBM and XGBoost (``enable_categorical=True``)
    find them by their dtype; CatBoost is told their positions, ``0 … k−1`` (``cat_features``,
    known before anything is fitted because they come first). A native split groups any subset
    of values (LightGBM, HistGradientBoosting and XGBoost sort the values by their gradient
    statistics, after Fisher 1958) where a split of codes can only cut their arbitrary order;
    CatBoost encodes them with its ordered target statistics (Prokhorenkova et al., NeurIPS
    2018). AutoGluon hands its boosted models the category dtype the same way.

    What it costs: the fitted pipeline builds that DataFrame on every ``predict`` call, and
    HistGradientBoosting, LightGBM and XGBoost re-encode it (HistGradientBoosting through an
    ``OrdinalEncoder`` of its own), so the pipeline predicts 1.7-2.3x slower per row on a
    1 000-row batch than with :func:`ordinal_categories` (experiments/predict_latency.py). The
    default space gives its tree learners codes.
    """
    from sklearn.base import clone

    if not _one_hot_branches(preprocessor):
        return None
    native = clone(preprocessor)
    first = _one_hot_branches(native)
    for _, steps, _ in first:
        steps.steps[-1] = ("categorycodes", CategoryCodes())
    coded = {name for name, _, _ in first}
    rest = [branch for branch in native.transformers if branch[0] not in coded]
    return native.set_params(transformers=first + rest).set_output(transform="pandas")


def category_columns(preprocessor: Any) -> int:
    """How many of the data's columns a :func:`make_preprocessor` preprocessor encodes as
    low-cardinality categories: the ``k`` first columns of its :func:`native_categories` copy."""
    return sum(len(columns) for _, _, columns in _one_hot_branches(preprocessor))


def categories_first(step: Any) -> Any:
    """``step`` applied to all but the pandas ``category`` columns, which pass through untouched
    and stay first: how a step between a :func:`native_categories` preprocessor and its learner
    (a scaler of the searched pipeline) leaves the category codes as they are."""
    from sklearn.compose import ColumnTransformer, make_column_selector

    return ColumnTransformer(
        [("categories", "passthrough", make_column_selector(dtype_include="category")),
         ("numbers", step, make_column_selector(dtype_exclude="category"))],
        verbose_feature_names_out=False,
    ).set_output(transform="pandas")


class CategoryCodes(TransformerMixin, BaseEstimator):
    """Category columns as pandas ``category`` columns of integer codes: ``0 … n−1`` for the
    ``n`` values of the training rows (scikit-learn's ``OrdinalEncoder``), ``−1`` for a value they
    never had — a category of its own, declared in every column's dtype, so that the training,
    validation and test rows share one set of categories (LightGBM and XGBoost check that they
    do; CatBoost refuses missing category values)."""

    def fit(self, X: Any, y: Any = None) -> "CategoryCodes":
        self.encoder_ = _ordinal_encoder().fit(X)
        self.n_features_in_ = self.encoder_.n_features_in_
        return self

    def transform(self, X: Any) -> Any:
        import pandas as pd
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "encoder_")
        codes = self.encoder_.transform(X).astype(np.int64)
        names = self.get_feature_names_out()
        return pd.DataFrame(
            {name: pd.Categorical(codes[:, j], categories=range(-1, len(values)))
             for j, (name, values) in enumerate(zip(names, self.encoder_.categories_))},
            index=X.index if hasattr(X, "index") else None)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        return self.encoder_.get_feature_names_out(input_features)


def _ordinal_encoder() -> Any:
    from sklearn.preprocessing import OrdinalEncoder

    return OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)


def _one_hot_branches(preprocessor: Any) -> list[tuple[str, Any, Any]]:
    """The branches of a :func:`make_preprocessor` ColumnTransformer that one-hot encode."""
    from sklearn.preprocessing import OneHotEncoder

    return [(name, steps, columns)
            for name, steps, columns in getattr(preprocessor, "transformers", [])
            if isinstance(getattr(steps, "named_steps", {}).get("onehotencoder"), OneHotEncoder)]


def _target_encoder() -> Any:
    """scikit-learn's ``TargetEncoder`` with its cross-fitting folds drawn from a fixed seed (so
    the same data give the same pipeline): a shuffled 5-fold generator from scikit-learn 1.9 on,
    which deprecates ``random_state`` for it, ``random_state=0`` before."""
    import sklearn
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import TargetEncoder
    from sklearn.utils.fixes import parse_version

    if parse_version(sklearn.__version__).release >= (1, 9):
        return TargetEncoder(cv=KFold(5, shuffle=True, random_state=0))
    return TargetEncoder(random_state=0)

