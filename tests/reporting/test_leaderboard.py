"""The leaderboard as a person reads it: printed within 100 columns with the pipeline, its score
and its time (never pandas' ``...`` in place of those columns, never an object's memory address),
and, when it has fewer rows than asked for, why."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from admm_automl import ADMM
from admm_automl.reporting.board import Leaderboard
from admm_automl.reporting.report import leaderboard
from admm_automl.reporting.rundir import RunData
from admm_automl.testing import tiny_space

LONG = "quantile_transformer -> hist_gradient_boosting"  # the longest name of the default space


def _run(statuses, fidelities=None, budget_stops=None, long=LONG) -> RunData:
    """A run of one evaluation per status, with a long pipeline name and many hyperparameters."""
    n = len(statuses)
    history = pd.DataFrame({
        "eval_id": range(n), "pipeline": [long if i % 2 else "none -> lightgbm" for i in range(n)],
        "loss": np.linspace(0.01, 0.2, n), "status": statuses,
        "fidelity": fidelities or [1.0] * n, "budget_stop": budget_stops or [False] * n,
        "fit_time": np.linspace(0.5, 120.0, n), "predict_time": 0.01,
        **{f"param:estimator__hyperparameter_{k}": np.linspace(0.001, 1000.0, n)
           for k in range(12)},
    })
    summary = {"metric": "roc_auc", "metric_offset": 1.0,
               "ensemble": {"members": [{"eval_id": 0, "weight": 0.75},
                                        {"eval_id": 1, "weight": 0.25}]}}
    return RunData(history, pd.DataFrame(), summary)


@pytest.fixture
def columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the width of the terminal, whatever runs the tests


def test_the_printed_board_fits_100_columns_and_shows_the_key_columns(columns):
    board = leaderboard(_run(["ok"] * 6), n=5)
    assert isinstance(board, Leaderboard) and len(board) == 5 and board.note == ""
    text = repr(board)
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines), text
    assert "..." not in text and "0x" not in text and "rows x" not in text
    header = lines[0].split()
    assert header[:4] == ["eval_id", "pipeline", "score", "fit_time"], text
    assert header[4] == "ensemble_weight"
    first = lines[1]
    assert LONG in lines[2] and "none -> lightgbm" in first
    assert "0.9900" in first and "75%" in first and "0.5" in first
    # beside the longest name the hyperparameters leave no useful room: named, not printed
    assert "hyperparameters" not in header
    assert re.sub(r"\s+", " ", text.split("\n5 ")[1]).endswith(
        "Also in this DataFrame, not printed: loss, predict_time, hyperparameters.")
    # beside shorter names they are printed, as name=value, cut to the width
    short = repr(leaderboard(_run(["ok"] * 6, long="standard_scaler -> lightgbm"), n=5))
    lines = short.splitlines()
    assert lines[0].split()[-1] == "hyperparameters" and all(len(x) <= 100 for x in lines)
    assert "  hyperparameter_0=0.001, " in lines[1] and lines[1].rstrip().endswith("…")
    assert lines[-1].endswith("the hyperparameters in full (dicts).") and "..." not in short
    # the frame itself is whole: every column, the full dicts
    assert {"loss", "predict_time", "ensemble_weight"} <= set(board.columns)
    assert len(board.iloc[0]["hyperparameters"]) == 12
    # a slice is a plain DataFrame, printed as pandas prints
    assert type(board.head(2)) is pd.DataFrame


def test_a_short_board_says_why(columns):
    statuses = ["ok", "ok", "ok", "timeout", "error", "error", "ok", "cancelled"]
    fidelities = [1.0, 1.0, 0.1, 1.0, 0.1, 1.0, 1.0, 1.0]
    stops = [False] * 6 + [True, True]
    board = leaderboard(_run(statuses, fidelities, stops), n=5)
    assert len(board) == 2
    note = board.note
    assert note.startswith("2 of the 5 rows asked for: only 2 of the run's 8 evaluations "
                           "succeeded on all the rows; of the other 6, 1 ran on part of the rows "
                           "only"), note
    assert "3 failed (2 error, 1 timeout; failures() says why)" in note
    assert "2 were stopped or cancelled by the end of the time budget." in note
    text = repr(board)
    assert re.sub(r"\s+", " ", note) in re.sub(r"\s+", " ", text)
    assert all(len(line) <= 100 for line in text.splitlines())
    # a run with fewer evaluations than asked for, all ranked
    few = leaderboard(_run(["ok"] * 3), n=10)
    assert few.note == "3 of the 10 rows asked for: the run made 3 evaluations, every one ranked."
    assert few.note in repr(few)


def test_the_board_of_a_real_run_prints_readably(columns, breast_cancer):
    X, y = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space=tiny_space(), theta_solver="random", z_solver="random",
                     inner_iter=3, inner_iter_step=0, random_state=0, executor="serial",
                     cv=None, max_evals=4).fit(X, y)
    text = repr(model.leaderboard(n=5))
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert "..." not in text and "0x" not in text
    assert text.splitlines()[0].split()[:4] == ["eval_id", "pipeline", "score", "fit_time"]
    assert f"of the 5 rows asked for: the run made 4 evaluations" in text or \
        "of the 5 rows asked for: only" in text
