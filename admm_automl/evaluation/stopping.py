"""Early stopping of a boosted learner's rounds on a trial's own validation rows.

A choice of the space that declares ``stopping: {parameter, method}``
(:class:`~admm_automl.space.space.Stopping`) is fitted by :func:`fit_stopped`: the searched value of
``parameter`` is the cap, each boosting library's own early stopping watches the loss on the
trial's validation rows (each fold's own within cross-validation; never the test rows, which the
search does not see), and the number of rounds kept is returned, recorded with the evaluation and
used by the refit on all rows (:meth:`PipelineSpace.to_pipeline` with ``rounds``; the mean over
the folds, rounded: :attr:`~admm_automl.records.Observation.refit_rounds`).

Choices where the libraries leave it to the caller, with the reason:

* **The loss watched** is each library's default training objective on the validation rows (log
  loss for classifiers, squared error for regressors), whatever the run's metric: it is smooth
  where accuracy or AUROC move in steps, and it is what LightGBM's and XGBoost's documentation and
  AutoGluon use for stopping.
* **Patience** (rounds without improvement before stopping): a tenth of the cap, at least 10 and at
  most 50 (:func:`patience`). A fixed count would either never stop a small cap or wait hundreds
  of rounds on a large one; AutoGluon's adaptive rule (up to 300 rounds on small data, for a
  learning rate of 0.05 and a cap of 10,000) is made for one long fit, where ours are many short
  ones at searched learning rates.
* **The model kept** is the one the trial scored: LightGBM, XGBoost and CatBoost predict with
  their best round (``best_iteration_`` / ``best_iteration`` / CatBoost's ``use_best_model``,
  which drops the trees after it), and the rounds recorded are that many;
  scikit-learn's HistGradientBoosting keeps every round up to the stop (``n_iter_``), and the rounds
  recorded are those. The rounds after the best that LightGBM and XGBoost trained are kept in the
  trial's model (its measured size includes them) but not in the refit; CatBoost drops them.
* **The validation rows pick the rounds and score the trial**, so the trial's loss is slightly
  optimistic, as AutoGluon's validation score of an early-stopped model is; the test rows and
  the refit are untouched by it.

A :class:`RoundsBox` (the run's ``boost_to_fit``) also stops the rounds at a moment on the
clock — a fold's share of its trial's time limit — keeping the best round so far, as AutoGluon
stops its boosted models at their time limit with a callback (``early_stopping_custom`` for
LightGBM, a time check for CatBoost and XGBoost): such a trial then returns the model it has
instead of being stopped with none (:class:`~.policy.FoldClock`). scikit-learn's
HistGradientBoosting takes no callback, and is not boxed; its trials are short.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from ..exceptions import InvalidParameterError
from ..space.space import Stopping

__all__ = ["RoundsBox", "fit_stopped", "patience"]


class RoundsBox:
    """The moment (``time.perf_counter``) a boosted fit stops its rounds at, keeping the best
    so far; ``fired`` says whether it stopped one (module docstring)."""

    def __init__(self, end: float) -> None:
        self.end = end
        self.fired = False

    def out(self) -> bool:
        """Whether the moment has passed (and the fit is to stop: ``fired`` from then on)."""
        self.fired = self.fired or time.perf_counter() >= self.end
        return self.fired


def patience(cap: int) -> int:
    """Rounds without improvement on the validation rows before a trial stops: a tenth of the cap
    ``cap``, at least 10 and at most 50 (module docstring)."""
    return int(min(50, max(10, round(0.1 * cap))))


def fit_stopped(estimator: Any, X: Any, y: Any, X_valid: Any, y_valid: Any, *,
                stopping: Stopping, box: RoundsBox | None = None) -> int:
    """Fit ``estimator`` on (X, y), stopping its rounds early on (X_valid, y_valid) by its
    library's own mechanism (``stopping.method``), and at ``box``'s moment if one is given
    (the best round so far kept); the number of rounds its predictions use.

    Raises
    ------
    InvalidParameterError
        If the estimator is not of the library ``stopping.method`` names (a space that declares
        the wrong method).
    """
    cap = int(estimator.get_params()[stopping.parameter])
    wait = patience(cap)
    if stopping.method == "hist_gradient_boosting":
        from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import (
            BaseHistGradientBoosting,
        )

        _check_type(estimator, BaseHistGradientBoosting, stopping)
        estimator.set_params(early_stopping=True, n_iter_no_change=wait, scoring="loss")
        estimator.fit(X, y, X_val=X_valid, y_val=y_valid)
        return int(estimator.n_iter_)
    if stopping.method == "lightgbm":
        import lightgbm

        _check_type(estimator, lightgbm.LGBMModel, stopping)
        # LightGBM 4.7 renamed eval_set to eval_X / eval_y (the old name warns)
        valid = ({"eval_X": (X_valid,), "eval_y": (y_valid,)}
                 if "eval_X" in inspect.signature(estimator.fit).parameters
                 else {"eval_set": [(X_valid, y_valid)]})
        estimator.fit(X, y, **valid, callbacks=[
            lightgbm.early_stopping(wait, first_metric_only=True, verbose=False),
            *([_LightGBMBox(box)] if box is not None else [])])
        return int(estimator.best_iteration_ or cap)
    if stopping.method == "catboost":
        import catboost

        _check_type(estimator, catboost.CatBoost, stopping)
        estimator.fit(X, y, eval_set=(X_valid, y_valid), early_stopping_rounds=wait,
                      use_best_model=True, verbose=False,
                      **({"callbacks": [_CatBoostBox(box)]} if box is not None else {}))
        return int(estimator.get_best_iteration()) + 1
    import xgboost  # "xgboost", the last of STOPPING_METHODS

    _check_type(estimator, xgboost.XGBModel, stopping)
    # XGBoost takes its callbacks as a parameter; they are taken off after the fit, so that no
    # clone of the fitted model (the refit's) carries a moment long past
    estimator.set_params(early_stopping_rounds=wait,
                         callbacks=[_xgboost_box(box)] if box is not None else None)
    try:
        estimator.fit(X, y, eval_set=[(X_valid, y_valid)], verbose=False)
    finally:
        estimator.set_params(callbacks=None)
    return int(estimator.best_iteration) + 1


class _LightGBMBox:
    """LightGBM's callback of a :class:`RoundsBox`: at the moment it raises LightGBM's own
    ``EarlyStopException`` with the best round so far on the first metric (which the early
    stopping beside it watches), as LightGBM's ``early_stopping`` does."""

    order = 40  # after early_stopping (30), so that its own stop comes first

    def __init__(self, box: RoundsBox) -> None:
        self.box, self.best, self.score = box, -1, None

    def __call__(self, env: Any) -> None:
        import lightgbm

        first = env.evaluation_result_list[0]
        higher = first[3]
        if self.score is None or (first[2] > self.score[0][2] if higher
                                  else first[2] < self.score[0][2]):
            self.best, self.score = env.iteration, env.evaluation_result_list
        if self.box.out():
            raise lightgbm.callback.EarlyStopException(self.best, self.score)


class _CatBoostBox:
    """CatBoost's callback of a :class:`RoundsBox`: ``after_iteration`` says whether to go on;
    ``use_best_model`` then keeps the best round so far."""

    def __init__(self, box: RoundsBox) -> None:
        self.box = box

    def after_iteration(self, info: Any) -> bool:
        return not self.box.out()


def _xgboost_box(box: RoundsBox) -> Any:
    """XGBoost's callback of a :class:`RoundsBox`: ``after_iteration`` returns True to stop;
    the early stopping after it has recorded the best round so far — from the second round on:
    XGBoost asks its callbacks in turn and stops at the first that says so, so a stop in the
    first round would leave no best round recorded."""
    import xgboost

    class Box(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            return epoch >= 1 and box.out()

    return Box()


def _check_type(estimator: Any, cls: type, stopping: Stopping) -> None:
    if not isinstance(estimator, cls):
        raise InvalidParameterError(
            f"the space declares `stopping: {{method: {stopping.method}}}` for "
            f"{type(estimator).__name__}, which is not a {cls.__module__.split('.')[0]} "
            f"{cls.__name__}; declare the method of the estimator's own library")
