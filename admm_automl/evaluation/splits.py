"""Fixed validation splits for a whole run, and nested subsamples for multi-fidelity evaluation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..exceptions import InvalidParameterError


#: ``cv="auto"``: k-fold cross-validation below this many rows, whatever the budget
CV_MAX_ROWS = 5000
#: ``cv="auto"`` with a time budget: k-fold cross-validation also while rows x features is at most
#: this many cells per second of budget (and the rows are fewer than :data:`CV_BUDGET_MAX_ROWS`)
CV_CELLS_PER_SECOND = 2500
CV_BUDGET_MAX_ROWS = 100_000
#: the folds of ``cv="auto"``
AUTO_FOLDS = 5
#: ``cv="auto"`` on small data: the folds are repeated (reshuffled) while rows x features x
#: repeats is at most this many cells per second of budget, up to :data:`MAX_REPEATS` times
REPEAT_CELLS_PER_SECOND = 500
MAX_REPEATS = 3


def resolve_cv(cv: "int | str | None", n_rows: int, n_features: int = 1,
               time_budget: float | None = None) -> int | None:
    """The folds of a run: ``cv`` itself, or for ``"auto"`` :data:`AUTO_FOLDS`-fold stratified
    cross-validation when the data are small or the time budget affords it, else one holdout split.

    ``"auto"`` cross-validates below :data:`CV_MAX_ROWS` rows, and with a time budget also while
    ``n_rows * n_features <= CV_CELLS_PER_SECOND * time_budget`` and ``n_rows <``
    :data:`CV_BUDGET_MAX_ROWS` (150,000 cells at 60 s, 750,000 at 300 s).

    Why: a holdout of 20 % of fewer than 5000 rows validates on under 1000 rows, where the standard
    error of AUROC is about 0.01 — as large as the differences the search has to tell apart (the
    breast-cancer demo's validation AUROC of 1.000 against a test AUROC of 0.983) — and fits on
    such data take well under a second, so five of them cost little. Above that, one holdout still
    lets a long search pick the pipeline that happens to suit its one validation set; cross-validation
    is worth its five fits while the budget buys enough of them, which the data's size in cells
    against the budget measures. The budget rule is FLAML's (``eval_method="auto"``: cross-validation
    while rows x features / 0.9 < 10^7 x budget / 3600 s and rows < 100,000). Measured side by side
    with the row rule alone on the seven shared datasets it changes (experiments/README.md, "cv='auto'
    and the time budget"): a wash at 60 s, better on two by about 0.002 test AUROC at 300 s.
    """
    if cv == "holdout":  # the command line's --cv holdout, and the same word in Python
        return None
    if cv != "auto":
        return cv
    if n_rows < CV_MAX_ROWS:
        return AUTO_FOLDS
    if (time_budget is not None and n_rows < CV_BUDGET_MAX_ROWS
            and n_rows * max(n_features, 1) <= CV_CELLS_PER_SECOND * time_budget):
        return AUTO_FOLDS
    return None


def resolve_repeats(cv: "int | str | None", n_rows: int, n_features: int = 1,
                    time_budget: float | None = None) -> int:
    """How many times ``cv="auto"`` repeats its k-fold cross-validation, each time on a new
    shuffle of the rows: on small data (below :data:`CV_MAX_ROWS` rows) with a time budget, as
    many times as ``n_rows * n_features * repeats <= REPEAT_CELLS_PER_SECOND * time_budget``
    allows, between 1 and :data:`MAX_REPEATS` (at 60 s: three times up to 10,000 cells, twice up
    to 15,000, else once; at 300 s: three times up to 50,000, twice up to 75,000). 1 for any
    other ``cv``.

    Why: on a few hundred rows the five validation folds are still a small, fixed sample, and a
    long search finds the pipelines that happen to suit it — the longer the search, the more it
    overfits its folds (pc4's best single pipeline: test AUROC 0.943 after 60 s, 0.906 after
    300 s). Repeating the folds on new shuffles averages that luck out for the price of as many
    fits, which small data and a long budget can afford; the fold models of every repeat are then
    the members' bags (:mod:`admm_automl.final.bagging`). AutoGluon's ``best_quality`` repeats its
    bagging folds likewise on small data while its time limit allows (``num_bag_sets``); the
    rate is a fifth of the one at which cross-validation itself pays (:data:`CV_CELLS_PER_SECOND`).
    """
    if cv != "auto" or time_budget is None or n_rows >= CV_MAX_ROWS:
        return 1
    cells = n_rows * max(n_features, 1)
    return int(min(MAX_REPEATS, max(1, REPEAT_CELLS_PER_SECOND * time_budget // cells)))


@dataclass(frozen=True)
class Split:
    """One train/validation split; ``order`` ranks the training rows so that every prefix is a
    (nearly) stratified subsample and smaller fidelities are nested in larger ones."""

    train: np.ndarray
    valid: np.ndarray
    order: np.ndarray

    def train_rows(self, fidelity: float) -> np.ndarray:
        if fidelity >= 1.0:
            return self.train
        n = max(1, int(math.ceil(fidelity * len(self.train))))
        return self.train[np.sort(self.order[:n])]


def nested_order(y: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """A permutation of ``range(len(y))`` whose prefixes keep the class proportions.

    Each class is shuffled; its k-th member gets the key (k + U) / n_class, U ~ U(0, 1), and rows are
    taken by increasing key, so every prefix holds about the same fraction of every class.
    """
    n = len(y) if y is not None else 0
    if y is None:
        return rng.permutation(n)
    keys = np.empty(n)
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        members = members[rng.permutation(len(members))]
        keys[members] = (np.arange(len(members)) + rng.uniform(size=len(members))) / len(members)
    return np.argsort(keys, kind="stable")


def make_splits(
    y: np.ndarray,
    *,
    classification: bool,
    cv: int | None,
    validation_size: float,
    seed: int,
    repeats: int = 1,
) -> list[Split]:
    """Stratified (classification) holdout of ``validation_size``, or ``cv``-fold splits, those
    ``repeats`` times on new shuffles (``cv * repeats`` splits, a repeat's folds together).

    Rows of a class too rare to stratify (fewer members than folds, or a single member for a
    holdout) always stay on the training side.
    """
    from sklearn.model_selection import (KFold, RepeatedKFold, RepeatedStratifiedKFold,
                                         ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit)

    n = len(y)
    rows = np.arange(n)
    rare = np.zeros(n, dtype=bool)
    if classification:
        labels, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
        rare = counts[inverse] < (cv or 2)
    kept = rows[~rare]
    if cv is None:
        if not 0.0 < validation_size < 1.0:
            raise InvalidParameterError(
                f"validation_size must be in (0, 1), got {validation_size!r}"
            )
        n_classes = len(np.unique(y[kept])) if classification else 0
        stratify = classification and n_classes > 1 and validation_size * len(kept) >= n_classes
        splitter = (StratifiedShuffleSplit if stratify else ShuffleSplit)(
            n_splits=1, test_size=validation_size, random_state=seed
        )
    elif repeats > 1:
        stratify = classification
        splitter = (RepeatedStratifiedKFold if stratify else RepeatedKFold)(
            n_splits=cv, n_repeats=repeats, random_state=seed
        )
    else:
        stratify = classification
        splitter = (StratifiedKFold if stratify else KFold)(
            n_splits=cv, shuffle=True, random_state=seed
        )
    if len(kept) < (cv or 2):
        scheme = 'a holdout split' if cv is None else f'{cv}-fold CV'
        if classification and rare.any():  # the cause is the rows per class, not their total
            per_class = ", ".join(f"{label!r}: {count}"
                                  for label, count in zip(labels.tolist(), counts.tolist()))
            cause = (f"{n} rows are too few for {scheme}: stratified folds need at least "
                     f"{cv or 2} rows of a class, and the classes have {per_class}")
        else:
            cause = f"{n} rows are too few for {scheme}"
        raise InvalidParameterError(
            cause + ("" if cv is None or cv <= 2 else
                     f" (cv='auto' chooses {AUTO_FOLDS} folds below {CV_MAX_ROWS} rows); pass a "
                     "smaller cv, such as cv=2")
        )
    rng = np.random.default_rng(seed)
    splits = []
    for train, valid in splitter.split(np.zeros((len(kept), 1)), y[kept] if stratify else None):
        train = np.sort(np.concatenate([kept[train], rows[rare]]))
        order = nested_order(y[train] if classification else None, rng)
        splits.append(Split(train, np.sort(kept[valid]), order))
    return splits
