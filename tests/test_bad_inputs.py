"""Bad input is named before the search, or handled, so that a user learns what to change instead
of meeting a failure deep inside a run: budgets too short, too few rows or positives, column types,
predict-time data, unimportable classes, non-finite predictions, and the same errors on the command
line. The probe list that these tests pin down is docs/probes.md."""

from __future__ import annotations

import datetime
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from admm_automl import ADMMClassifier, ADMMRegressor, cli
from admm_automl.evaluation import TrialContext, get_metric, make_splits
from admm_automl.evaluation.data import ColumnConverter, column_kinds, make_preprocessor
from admm_automl.exceptions import (
    IdentifierColumnWarning,
    DataError,
    InvalidParameterError,
    SearchError,
    TimeBudgetWarning,
)
from admm_automl.testing import tiny_space

X, Y = load_breast_cancer(return_X_y=True, as_frame=True)
X, Y = X.iloc[:200, :6].copy(), Y.iloc[:200].to_numpy()
FAST = dict(search_space=tiny_space(), max_evals=4, inner_iter=2, inner_iter_step=0,
            theta_solver="random", z_solver="random", random_state=0, executor="serial", cv=None)


def fit(X_=None, y=None, cls=ADMMClassifier, **params):
    return cls(**{**FAST, **params}).fit(X if X_ is None else X_, Y if y is None else y)


def with_column(name, values):
    frame = X.copy()
    frame[name] = values
    return frame


def yaml_space(tmp_path, class_path):
    path = tmp_path / "space.yaml"
    path.write_text("name: bad\nmodules:\n  - name: estimator\n    choices:\n"
                    f"      - name: mine\n        class: {class_path}\n")
    return path


# ------------------------------------------------------------------ budgets too short
@pytest.mark.slow
def test_serial_fit_longer_than_the_time_budget_warns_end_to_end():
    sleeps = {"seconds": {"type": "fixed", "value": 5}}
    space = tiny_space({"sleeper": {"class": "admm_automl.testing.SleepingClassifier",
                                    "hyperparameters": sleeps}})
    with pytest.warns(TimeBudgetWarning, match="executor='serial' runs an evaluation"):
        model = fit(search_space=space, time_budget=3.0, max_evals=None)
    assert model.n_evals_ == 1


def test_a_time_budget_used_up_by_the_set_up_is_a_search_error():
    with pytest.raises(SearchError, match=r"time_budget=1e-06 s ended before any pipeline "
                       r"evaluation finished: the set-up .* took it all"):
        fit(time_budget=1e-6, max_evals=None)


# ------------------------------------------------------------------ too few rows or positives
@pytest.mark.parametrize(
    "X_bad,y_bad,params,match",
    [
        (X.iloc[:5], np.array([0, 1, 0, 1, 0]), {"cv": None},
         r"roc_auc metric cannot be computed on the validation split: it holds 1 row\(s\), all "
         r"of class 0 \(the data have 5 row\(s\): 3 of class 0, 2 of class 1\)"),
        (X, np.r_[1, 1, np.zeros(len(X) - 2, dtype=int)], {"cv": None},
         r"validation split: it holds 40 row\(s\), all of class 0 .*198 of class 0, 2 of class 1"
         r".*larger validation_size"),
        (X, np.r_[1, 1, np.zeros(len(X) - 2, dtype=int)], {"cv": 3},
         r"validation fold 1 of 3: it holds"),
        (X.iloc[:5], np.array([0, 1, 0, 1, 0]), {"cv": "auto"},  # 5 folds below 5000 rows
         r"5 rows are too few for 5-fold CV: stratified folds need at least 5 rows of a class, "
         r"and the classes have 0: 3, 1: 2 \(cv='auto' chooses 5 folds below 5000 rows\); pass "
         r"a smaller cv"),
        (X.iloc[:5], np.arange(5.0), {"cls": ADMMRegressor, "scoring": "r2", "cv": None},
         r"r2 metric cannot be computed on the validation split: it holds 1 row\(s\)"),
        (X, np.linspace(1.0, 2.0, len(X)) * 1e200, {"cls": ADMMRegressor, "cv": 3},
         r"rmse metric cannot be computed: the target's values are too large for float64 "
         r"arithmetic \(largest \|y\| = 2e\+200; their squares overflow\). Rescale y"),
    ],
)
def test_too_few_rows_or_positives_for_the_metric_are_refused_before_the_search(
        X_bad, y_bad, params, match, tmp_path):
    with pytest.raises(DataError, match=match):
        fit(X_bad, y_bad, output_dir=tmp_path, **params)
    assert not (tmp_path / "journal.jsonl").exists()


def test_a_metric_defined_on_one_class_still_runs_with_two_positives():
    model = fit(y=np.r_[1, 1, np.zeros(len(X) - 2, dtype=int)], scoring="accuracy")
    assert model.n_evals_ == 4 and model.n_failed_ == 0


# ------------------------------------------------------------------ column types
def test_column_kinds_follow_the_stated_rule():
    frame = pd.DataFrame({
        "number": [1.5, np.nan, 3.0], "flag": [True, False, True],
        "nullable": pd.array([1, None, 3], dtype="Int64"),
        "text": ["a", None, "b"], "category": pd.Categorical(["x", "y", "x"]),
        "numeric_text": ["1", " 2.5", None], "objects": pd.Series([1, 2.5, None], dtype=object),
        "empty": pd.Series([None, None, None], dtype=object),
        "when": pd.to_datetime(["2020-01-01", None, "2021-03-04"]),
        "dates": [datetime.date(2020, 1, 1), None, datetime.date(2020, 1, 2)],
        "wait": pd.to_timedelta([1, 2, None], unit="s"),
        "na_text": pd.array(["a", None, "b"], dtype="string"),
    })
    assert dict(zip(frame.columns, column_kinds(frame))) == {
        "number": "number", "flag": "number", "nullable": "number", "text": "category",
        "category": "category", "numeric_text": "numeric_text", "objects": "numeric_text",
        "empty": "numeric_text", "when": "datetime", "dates": "datetime", "wait": "timedelta",
        "na_text": "na_text",
    }
    assert column_kinds(np.ones((3, 2))) == ("number", "number")


@pytest.mark.parametrize(
    "column,match",
    [
        ([1 if i % 2 else "a" for i in range(3)], r"column 'bad' mixes values of several types "
         r"\('a' \(str\), 1 \(int\)\).*astype\(str\).*to_numeric"),
        ([[1], [2], [3]], r"column 'bad' holds list values"),
        (np.ones(3) * 1j, "column 'bad' holds complex numbers"),
        (["1", "inf", "2"], "column 'bad' holds infinity"),
        (pd.Categorical([1, "a", 1]), "column 'bad' is categorical with categories of several"),
    ],
)
def test_columns_without_an_obvious_meaning_are_refused_with_their_name(column, match):
    with pytest.raises(DataError, match=match):
        column_kinds(pd.DataFrame({"good": [1.0, 2.0, 3.0], "bad": column}))


def test_duplicate_column_names_are_refused_with_their_names():
    with pytest.raises(DataError, match=r"X has duplicate column names \['a'\]"):
        fit(X.set_axis(["a", "a", *X.columns[2:]], axis=1))


def test_numbers_stored_as_text_are_searched_as_numbers_and_converted_by_the_pipeline():
    as_text, as_numbers = fit(X.astype(str)), fit(X)
    np.testing.assert_allclose(as_text.history_["loss"], as_numbers.history_["loss"])
    pipeline = pickle.loads(pickle.dumps(as_text.best_pipeline_))  # raw text in, as fitted
    np.testing.assert_array_equal(pipeline.predict(X.astype(str)), as_numbers.predict(X))


def test_plain_numbers_and_text_keep_a_pipeline_of_scikit_learn_objects_only():
    frame = with_column("city", np.where(np.arange(len(X)) % 3, "Oslo", "Rome"))
    steps = str(make_preprocessor(frame))
    assert "ColumnConverter" not in steps and "OneHotEncoder" in steps


def test_a_many_valued_text_column_is_target_encoded_not_one_hot_encoded():
    """80 values: one target-encoded feature (one per class for three classes), cross-fitted,
    instead of 80 one-hot columns; a few-valued column stays one-hot."""
    rng = np.random.default_rng(0)
    shop = rng.choice([f"s{i}" for i in range(80)], size=len(X))
    frame = with_column("shop", shop).assign(colour=np.where(np.arange(len(X)) % 2, "a", "b"))
    pre = make_preprocessor(frame).fit(frame, Y)
    names = list(pre.get_feature_names_out())
    assert [n for n in names if n.startswith("shop")] == ["shop"]
    assert {"colour_a", "colour_b"} <= set(names) and len(names) == X.shape[1] + 3
    three = make_preprocessor(frame).fit(frame, np.arange(len(X)) % 3)
    assert sum(n.startswith("shop") for n in three.get_feature_names_out()) == 3
    model = fit(frame)
    assert model.n_failed_ == 0 and model.predict(frame.iloc[:5]).shape == (5,)


def test_datetime_columns_become_a_timestamp_and_calendar_features():
    when = pd.Series(pd.to_datetime(["2024-02-29 06:30", None, "1970-01-02"], format="ISO8601"))
    out = ColumnConverter("datetime").fit(when.to_frame("t")).transform(when.to_frame("t"))
    np.testing.assert_allclose(out[0], [1709188200.0, 2024, 2, 29, 3, 6.5])
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[2], [86400.0, 1970, 1, 2, 4, 0.0])
    frame = with_column("day", pd.date_range("2020-01-01", periods=len(X), freq="D"))
    pre = make_preprocessor(frame).fit(frame)  # dates alone: no hour feature
    assert list(pre.get_feature_names_out()[-5:]) == ["day", "day_year", "day_month", "day_day",
                                                      "day_weekday"]
    model = fit(frame)
    assert model.n_failed_ == 0 and model.predict(frame).shape == (len(X),)


def test_text_with_pandas_na_is_imputed_instead_of_failing_every_pipeline():
    model = fit(with_column("s", pd.array(["a", None, "b", "a"] * 50, dtype="string")))
    assert model.n_failed_ == 0


# ------------------------------------------------------------------ predict time
@pytest.fixture(scope="module")
def fitted_with_text():
    frame = with_column("city", np.where(np.arange(len(X)) % 3, "Oslo", "Rome"))
    return fit(frame), frame


def test_an_array_for_a_model_fitted_on_text_columns_is_refused_naming_them(fitted_with_text):
    model, frame = fitted_with_text
    with pytest.raises(DataError, match=r"X is an array, but the model was fitted on a DataFrame "
                       r"whose column\(s\) \['city'\] are not numbers"):
        model.predict(frame.to_numpy())


def test_a_string_in_a_numeric_column_at_predict_time_names_the_column(fitted_with_text):
    model, frame = fitted_with_text
    bad = frame.astype({"mean texture": object})
    bad.loc[3, "mean texture"] = "n/a"
    with pytest.raises(DataError, match=r"column 'mean texture' holds 'n/a' \(row 3\), which is "
                       "not a number"):
        model.predict_proba(bad)
    as_text = frame.astype({"mean texture": str})  # numbers as text: converted
    np.testing.assert_array_equal(model.predict(as_text), model.predict(frame))


def test_an_array_for_a_model_fitted_on_numbers_only_is_accepted():
    model = fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: no feature names
        np.testing.assert_array_equal(model.predict(X.to_numpy()), model.predict(X))


def test_a_series_is_refused_as_x():
    with pytest.raises(DataError, match="X must be 2-D"):
        fit(X.iloc[:, 0])


# ------------------------------------------------------------------ unimportable classes
@pytest.mark.parametrize(
    "path,match",
    [
        ("sklearn.ensemble.RandomForrestClassifier",
         r"module 'estimator', choice 'mine': cannot import class "
         r"'sklearn.ensemble.RandomForrestClassifier'.*Did you mean 'RandomForestClassifier'\?"),
        ("not_a_package.Model", r"cannot import class 'not_a_package.Model': No module named"),
    ],
)
def test_a_class_that_cannot_be_imported_is_found_at_set_up(tmp_path, path, match):
    with pytest.raises(InvalidParameterError, match=match):
        fit(search_space=yaml_space(tmp_path, path), executor="process", output_dir=tmp_path)
    assert not (tmp_path / "journal.jsonl").exists()  # nothing was started


def test_a_class_inside_a_hyperparameter_value_is_checked_too():
    tree = {"class": "sklearn.tree.DecisionTreeClassifer"}  # sic
    space = tiny_space({"bag": {"class": "sklearn.ensemble.BaggingClassifier", "hyperparameters": {
        "estimator": {"type": "fixed", "value": tree}}}})
    with pytest.raises(InvalidParameterError, match="choice 'bag'.*DecisionTreeClassifier"):
        space.check_classes()


def test_a_hyperparameter_the_class_does_not_take_is_found_at_set_up():
    space = tiny_space({"forest": {"class": "sklearn.ensemble.RandomForestClassifier",
                                   "hyperparameters": {"n_estimatorz": {"type": "fixed",
                                                                        "value": 10}}}})
    with pytest.raises(InvalidParameterError, match=r"choice 'forest': RandomForestClassifier "
                       r"takes no parameter 'n_estimatorz'. Did you mean 'n_estimators'\?"):
        fit(search_space=space)


def test_an_output_dir_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "results"
    path.write_text("")
    with pytest.raises(InvalidParameterError, match="output_dir .*results' is a file"):
        fit(output_dir=path)


# ------------------------------------------------------------------ non-finite predictions
def test_non_finite_predictions_are_recorded_as_such():
    space = tiny_space({"nan": {"class": "admm_automl.testing.NaNClassifier"}}).for_task(
        "classification")
    splits = make_splits(Y, classification=True, cv=None, validation_size=0.2, seed=0)
    metric = get_metric(None, "classification", "binary")
    ctx = TrialContext(space, X.to_numpy(), Y, splits, metric)
    result = ctx.run((0, 0), space.encoding.initial_theta, 1.0)
    assert result["status"] == "failed"
    assert result["error"].startswith("ValueError: the pipeline produced non-finite values (NaN "
                                      "or infinity) when predicting the validation data")


# ------------------------------------------------------------------ the same on the command line
@pytest.mark.parametrize(
    "args,match",
    [
        (["--time-budget", "0.01"], "time_budget=0.01 s ended before any pipeline evaluation"),
        (["--max-evals", "2", "--search-space", "SPACE"], "cannot import class 'sklearn.svm.SVX'"),
    ],
)
def test_run_errors_on_the_command_line_are_one_line_and_a_failing_exit_code(
        tmp_path, capsys, args, match):
    args = [str(yaml_space(tmp_path, "sklearn.svm.SVX")) if a == "SPACE" else a for a in args]
    code = cli.main(["fit", "--dataset", "breast_cancer", *args])
    err = capsys.readouterr().err
    assert code != 0 and match in err and len(err.strip().splitlines()) == 1


def test_an_identifier_like_text_column_is_named_with_a_hint():
    frame = X.assign(customer=[f"c{i:05d}" for i in range(len(X))],
                     colour=np.where(np.arange(len(X)) % 2, "red", "blue"))
    with pytest.warns(IdentifierColumnWarning) as caught:
        fit(frame, Y)
    (message,) = [str(w.message) for w in caught if w.category is IdentifierColumnWarning]
    assert message.startswith("column 'customer' has 200 distinct values in 200 rows: it looks "
                              "like an identifier. It is target-encoded")  # not 'colour'


def test_a_string_pyarrow_column_is_text():
    pytest.importorskip("pyarrow")
    colours = pd.array(np.where(np.arange(len(X)) % 3, "red", "blue"), dtype="string[pyarrow]")
    frame = with_column("colour", colours)
    assert column_kinds(frame)[-1] == "na_text"  # as the "string" dtype: text, NA imputed
    model = fit(frame)
    assert model.predict(frame.iloc[:5]).shape == (5,)


def test_summary_and_leaderboard_before_fit_are_not_fitted_errors():
    from sklearn.exceptions import NotFittedError

    for method in ("summary", "leaderboard", "report"):
        with pytest.raises(NotFittedError):
            getattr(ADMMClassifier(), method)()


@pytest.mark.parametrize("n", [-1, 0, 2.5, True])
def test_a_leaderboard_of_no_rows_or_a_fraction_of_one_is_refused(n):
    with pytest.raises(InvalidParameterError, match=r"positive integer; got"):
        fit().leaderboard(n=n)


def test_an_empty_output_dir_is_refused_instead_of_writing_into_the_working_directory():
    with pytest.raises(InvalidParameterError, match=r"'output_dir'.*non-empty path"):
        fit(output_dir="")


def test_cv_holdout_is_the_same_single_split_in_python_as_on_the_command_line():
    holdout, none = fit(cv="holdout"), fit(cv=None)
    assert len(holdout.history_) == len(none.history_)
    np.testing.assert_array_equal(holdout.history_["loss"], none.history_["loss"])


def test_too_few_rows_per_class_for_the_folds_names_the_rows_per_class():
    with pytest.raises(DataError, match=r"12 rows .* 5-fold CV: .* at least 5 rows of a class, "
                                        r"and the classes have 0: 4, 1: 4, 2: 4"):
        fit(X.iloc[:12], np.arange(12) % 3, cv=5)


def test_a_ratio_constraint_above_one_is_refused_as_impossible():
    frame = X.assign(g=np.arange(len(X)) % 2)
    with pytest.raises(InvalidParameterError, match=r"ratio .* at most 1.*'>= 1.5' cannot be met"):
        fit(frame, constraints=[{"name": "demographic_parity_ratio", "threshold": 1.5,
                                 "group_by": "g"}])
