"""The splits of a run (admm_automl/evaluation/splits.py): what cv="auto" chooses from the
data's size and the time budget, and repeated folds (a fit's own choice:
tests/run/test_default.py)."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.evaluation.splits import CV_MAX_ROWS, make_splits, resolve_cv, resolve_repeats


def test_cv_auto_is_five_folds_below_the_row_limit():
    assert resolve_cv("auto", CV_MAX_ROWS - 1) == 5
    assert resolve_cv("auto", CV_MAX_ROWS) is None
    assert resolve_cv("auto", CV_MAX_ROWS - 1, n_features=1000, time_budget=1) == 5
    assert resolve_cv(3, 100) == 3 and resolve_cv(None, 100) is None
    assert resolve_cv(None, 100, n_features=1, time_budget=3600) is None


def test_cv_auto_cross_validates_what_the_time_budget_affords():
    # 8192 rows x 8 features = 65,536 cells: 5 folds at 60 s (150,000 cells), a holdout at 10 s
    assert resolve_cv("auto", 8192, n_features=8, time_budget=60) == 5
    assert resolve_cv("auto", 8192, n_features=8, time_budget=10) is None
    assert resolve_cv("auto", 8192, n_features=8) is None  # no budget: the row rule alone
    # 31,718 rows x 8: a holdout at 60 s, 5 folds at 300 s; never from 100,000 rows on
    assert resolve_cv("auto", 31_718, n_features=8, time_budget=60) is None
    assert resolve_cv("auto", 31_718, n_features=8, time_budget=300) == 5
    assert resolve_cv("auto", 100_000, n_features=1, time_budget=10**6) is None


def test_cv_auto_repeats_the_folds_on_small_data_while_the_budget_affords_it():
    # sonar's 146 x 60 = 8,760 cells: three repeats at 60 s (500 x 60 = 30,000 cells)
    assert resolve_repeats("auto", 146, n_features=60, time_budget=60) == 3
    # pc4's 1,020 x 37 = 37,740 cells: once at 60 s, three times at 300 s (150,000)
    assert resolve_repeats("auto", 1020, n_features=37, time_budget=60) == 1
    assert resolve_repeats("auto", 1020, n_features=37, time_budget=300) == 3
    assert resolve_repeats("auto", 1020, n_features=37, time_budget=100) == 1  # 50,000: 1.3
    assert resolve_repeats("auto", 1020, n_features=37, time_budget=160) == 2
    # never without a budget, from CV_MAX_ROWS rows on, or for a cv the user chose
    assert resolve_repeats("auto", 146, n_features=60) == 1
    assert resolve_repeats("auto", CV_MAX_ROWS, n_features=1, time_budget=10**6) == 1
    assert resolve_repeats(5, 146, n_features=60, time_budget=3600) == 1


def test_repeated_folds_validate_every_row_once_per_repeat():
    y = np.repeat([0, 1], [60, 40])
    splits = make_splits(y, classification=True, cv=5, validation_size=0.2, seed=0, repeats=3)
    assert len(splits) == 15
    for r in range(3):
        valid = np.concatenate([s.valid for s in splits[5 * r: 5 * r + 5]])
        assert sorted(valid) == list(range(100))  # each repeat's folds partition the rows
        assert all(np.mean(y[s.valid]) == pytest.approx(0.4) for s in splits[5 * r: 5 * r + 5])
    assert not np.array_equal(splits[0].valid, splits[5].valid)  # a new shuffle per repeat
    again = make_splits(y, classification=True, cv=5, validation_size=0.2, seed=0, repeats=3)
    assert all(np.array_equal(a.valid, b.valid) for a, b in zip(splits, again))
